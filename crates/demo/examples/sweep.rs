//! Runs the demo on a range of seeds and says which fail and why (issue 40:
//! every seed 1–300 runs to the end).
//!
//! `cargo run -p ratchet-demo --example sweep -- FIRST LAST [PROPOSALS]`

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let (first, last) = (
        args.first().copied().unwrap_or(1),
        args.get(1).copied().unwrap_or(300),
    );
    let proposals = args.get(2).copied().unwrap_or(40) as usize;
    let started = std::time::Instant::now();
    let mut failed = Vec::new();
    for seed in first..=last {
        let dir = tempfile::tempdir()?;
        let options = ratchet_demo::DemoOptions {
            seed,
            proposals,
            dir: dir.path().to_path_buf(),
        };
        let t = std::time::Instant::now();
        match ratchet_demo::run_demo(&options, &mut |_| {}) {
            Ok(s) if s.chain_verified => {
                println!("seed {seed}: ok ({:.1} s)", t.elapsed().as_secs_f64())
            }
            Ok(_) => {
                println!("seed {seed}: FAILED: the chain does not verify");
                failed.push(seed);
            }
            Err(e) => {
                println!("seed {seed}: FAILED: {e}");
                failed.push(seed);
            }
        }
    }
    println!(
        "seeds {first}–{last}, {proposals} proposals: {} failed {failed:?}, {:.0} s",
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
