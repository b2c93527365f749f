//! The `ratchet` binary as its users run it: one integration binary, one
//! module per promise — the commands end to end (`commands`), the habits
//! of a CLI (`ux`), attacks through the files (`attacks`), whose evidence
//! a class counts (`authority`), the inputs of a
//! decision beside the trace (`boundaries`), the work commands (`work`),
//! the server with its clients (`serve`), and a 30-benchmark suite's
//! regression caught on five real tools' runs (`suite30`).

mod attacks;
mod authority;
mod benchmarks;
mod boundaries;
mod ci_recipe;
mod commands;
mod common;
mod newcomer;
mod numbers_39;
mod real_files_37;
mod red_team_35;
mod red_team_35b;
mod red_team_hred;
mod serve;
mod snapshots;
mod suite30;
mod ux;
mod work;
