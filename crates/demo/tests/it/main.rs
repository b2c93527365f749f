//! The demo end to end: what `ratchet demo` shows is what the library did.

mod demo;
