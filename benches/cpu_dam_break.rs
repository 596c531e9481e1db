//! `cargo bench`: particle-steps per second and bytes per particle of the CPU backend on the
//! shipped 2D and 3D dam breaks (the same measurement as `surge bench --backend cpu`: the
//! developed flow in the middle of the run, its checkpoint cached). Set SURGE_BENCH_STEPS to
//! change the number of timed steps (default 100), SURGE_BENCH_DP_3D to refine the 3D case
//! and SURGE_BENCH_DEVELOP_TO to time another moment (0: the first steps at rest).

use surge_core::Case;
use surge_runtime::{bench, cpu_simulation, develop, develop_cache, BenchResult};

fn main() {
    let steps: u64 = std::env::var("SURGE_BENCH_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(100);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let dp3 = std::env::var("SURGE_BENCH_DP_3D").ok().map(|d| vec![format!("dp={d}")]).unwrap_or_default();
    let at: Option<f64> = std::env::var("SURGE_BENCH_DEVELOP_TO").ok().and_then(|s| s.parse().ok());
    println!("{}", BenchResult::HEADER);
    for (file, overrides) in [("dam_break_2d.toml", vec![]), ("dam_break_3d.toml", dp3)] {
        let case = Case::from_file(&root.join(file), &overrides).expect("shipped case");
        let mut sim = cpu_simulation(&case, 0).expect("case loads");
        // `surge bench`'s default: the middle of the run.
        let at = at.unwrap_or(0.5 * case.end_time);
        if at > 0.0 {
            let cache = develop_cache(&sim, at);
            develop(&mut sim, at, cache.as_deref()).expect("the flow develops");
        }
        println!("{}", bench(sim, steps).expect("benchmark run").row());
    }
}
