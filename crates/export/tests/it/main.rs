//! Export to Arrow and Parquet, read back by an independent reader.

mod attacks;
mod parquet;
