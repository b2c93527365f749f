//! The HTML report and the Markdown summary, as a browser and a reader see them.

mod alarms;
mod benchmarks;
mod markdown;
mod report;
mod timings;
