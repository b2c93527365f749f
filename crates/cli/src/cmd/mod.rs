//! One module per command family: each function parses nothing (the flags
//! arrive typed), calls the library, and formats.

pub mod drift;
pub mod gate;
pub mod ingest;
pub mod serve;
pub mod store;
pub mod work;
