//! The gate against its references (fishtest, published tables, seeded
//! simulation) and its attackers: one integration binary, one module per
//! promise.

mod attacks;
mod benchmarks;
mod betting;
mod bounds;
mod cells_and_declarations;
mod closure;
mod common;
mod decide;
mod error_rates;
mod file_edits_of_the_evidence;
mod fishtest;
mod noninferiority;
mod order_40;
mod polled_by_the_evidence_writer;
mod price;
mod recorded;
mod red_team_36;
mod red_team_rt;
mod simulation;
mod verdict_json;
