//! Sampling never changes a run: gauges and frames are read at the first step end at or
//! after their times and never shorten a step (docs/ARCHITECTURE.md, "Sampling"). The same
//! case with gauge rows every step, every 1 ms and every 5 ms (and frames at two intervals)
//! ends with bitwise the same particles, and the rows a coarser interval writes are rows of
//! the every-step table, bit for bit. The case is the 2D dam break with the Verlet scheme,
//! which blew up when dt was shortened to land on 1-ms gauge times.

mod common;

use common::*;
use std::path::{Path, PathBuf};
use surge_core::geometry::fill;
use surge_io::checkpoint;
use surge_runtime::{Observer, Progress, RunOptions};

struct Quiet;

impl Observer for Quiet {
    fn progress(&mut self, _: &Progress) {}
    fn frame(&mut self, _: u32, _: f64, _: &[PathBuf]) {}
}

/// Run the small Verlet dam break to t = 0.1 s with these output settings; the end state
/// is written as a checkpoint.
fn run(out: &Path, gauge_interval: &str, frame_interval: &str) -> checkpoint::Checkpoint {
    let sets = [
        "dp=0.04",
        "time.scheme=\"verlet\"",
        "time.end=0.1",
        "checkpoint.interval=1",
        &format!("output.gauge_interval={gauge_interval}"),
        &format!("output.interval={frame_interval}"),
    ];
    let case = case("dam_break_2d.toml", &sets);
    let backend = surge_cpu::CpuBackend::new(&case, &fill(&case), 2).unwrap();
    let sim = surge_runtime::Simulation::new(case.clone(), Box::new(backend));
    let summary = surge_runtime::run(&case, sim, 2, &RunOptions::new(out.to_owned()), &mut Quiet)
        .unwrap_or_else(|(e, _)| panic!("{e}"));
    assert_eq!(summary.status, "completed");
    let sets = checkpoint::list(&out.join(checkpoint::DIR)).unwrap();
    checkpoint::load(&sets.last().expect("the end checkpoint").files[0].1, None).unwrap()
}

fn rows(out: &Path) -> Vec<String> {
    std::fs::read_to_string(out.join("gauges.csv")).unwrap().lines().skip(1).map(str::to_owned).collect()
}

#[test]
fn gauges_every_step_every_ms_and_every_5_ms_leave_the_run_bitwise_unchanged() {
    let dirs: Vec<TempDir> = ["step", "1ms", "5ms"].iter().map(|n| TempDir::new(&format!("sampling-{n}"))).collect();
    // 1e-9 s is far below any dt: a row after every step.
    let every_step = run(&dirs[0], "1e-9", "0.02");
    let ms = run(&dirs[1], "0.001", "0.05");
    let five = run(&dirs[2], "0.005", "0.02");
    let (all, one, five_rows) = (rows(&dirs[0]), rows(&dirs[1]), rows(&dirs[2]));
    let steps = every_step.header.step as usize;
    assert_eq!(all.len(), steps + 1, "a row at t = 0 and after each of the {steps} steps");
    assert!(one.len() > 90 && five_rows.len() > 18, "{} and {} rows", one.len(), five_rows.len());
    for (c, what) in [(&ms, "1 ms"), (&five, "5 ms")] {
        assert_eq!(c.header.step, every_step.header.step, "{what}: steps");
        assert_eq!(c.header.time.to_bits(), every_step.header.time.to_bits(), "{what}: end time");
        let (a, b) = (c.particles.arrays(), every_step.particles.arrays());
        assert_eq!(bytemuck::cast_slice::<_, u8>(&a.pos), bytemuck::cast_slice::<_, u8>(&b.pos), "{what}: positions");
        assert_eq!(bytemuck::cast_slice::<_, u8>(&a.vel), bytemuck::cast_slice::<_, u8>(&b.vel), "{what}: velocities");
    }
    for (rows, what) in [(&one, "1 ms"), (&five_rows, "5 ms")] {
        for r in rows.iter() {
            assert!(all.contains(r), "{what}: the row `{r}` is not a row of the every-step table");
        }
    }
}
