//! `cargo bench`: particle-steps per second and bytes per particle of the CPU backend on the
//! shipped 2D and 3D dam breaks (the same measurement as `surge bench`). Set SURGE_BENCH_STEPS
//! to change the number of timed steps (default 100) and SURGE_BENCH_DP_3D to refine the 3D
//! case.

use surge_core::Case;
use surge_runtime::{bench, cpu_simulation, BenchResult};

fn main() {
    let steps: u64 = std::env::var("SURGE_BENCH_STEPS").ok().and_then(|s| s.parse().ok()).unwrap_or(100);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let dp3 = std::env::var("SURGE_BENCH_DP_3D").ok().map(|d| vec![format!("dp={d}")]).unwrap_or_default();
    println!("{}", BenchResult::HEADER);
    for (file, overrides) in [("dam_break_2d.toml", vec![]), ("dam_break_3d.toml", dp3)] {
        let case = Case::from_file(&root.join(file), &overrides).expect("shipped case");
        let sim = cpu_simulation(&case, 0).expect("case loads");
        println!("{}", bench(sim, steps).expect("benchmark run").row());
    }
}
