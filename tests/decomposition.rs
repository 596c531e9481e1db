//! Decomposition is invisible: 1, 2, 3 and 4 devices (CPU workers in CI, GPUs with
//! `SURGE_TEST_BACKEND=cuda`) give bitwise the same particles, compared by id, and the same
//! gauges. Tolerance: none (bitwise). Each particle sums its neighbours in stencil order
//! then by (cell, kind, id) whatever device holds them, copies are updated with their
//! owner's forces, and dt and the rebuild decision are maxima (exact) over the devices, so
//! no rounding differs; a difference of one bit is a bug.

mod common;
use common::*;
use surge_core::backend::Snapshot;
use surge_core::grid::Grid;
use surge_core::Case;
use surge_runtime::Simulation;

fn steps(sim: &mut Simulation, n: u64) {
    for _ in 0..n {
        sim.step(f64::INFINITY).unwrap_or_else(|e| panic!("{e}"));
    }
}

/// Run the case on 1 device and on each of `counts`, `n` steps, and compare particles and
/// gauges; returns the last multi-device simulation.
fn compare(case: &Case, counts: &[usize], n: u64) -> Simulation {
    let mut one = sim_devices(case, 1);
    steps(&mut one, n);
    assert!(one.rebuilds() > 1, "the run must cross rebuilds");
    let (s1, g1) = (one.snapshot().unwrap(), one.gauges().unwrap());
    let mut last = None;
    for &k in counts {
        let mut many = sim_devices(case, k);
        assert_eq!(many.device_count(), k);
        steps(&mut many, n);
        assert_eq!(many.rebuilds(), one.rebuilds(), "{k} devices rebuilt at other steps");
        assert_eq!(many.time().to_bits(), one.time().to_bits(), "{k} devices: time");
        assert_same_particles(&s1, &many.snapshot().unwrap(), &format!("{} on {k} devices", case.name));
        let g = many.gauges().unwrap();
        assert_eq!(
            g.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            g1.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            "{k} devices: gauges"
        );
        last = Some(many);
    }
    last.expect("at least one device count")
}

#[test]
fn dam_break_2d_on_2_3_4_devices_matches_1_along_y() {
    let case = case("dam_break_2d.toml", &[]);
    compare(&case, &[2, 3, 4], 300);
}

#[test]
fn dam_break_2d_on_2_3_4_devices_matches_1_along_x() {
    // Cut across the surge: the front runs through every slice boundary.
    let case = case("dam_break_2d.toml", &["decomposition.split_axis=\"x\"", "decomposition.balance=false"]);
    compare(&case, &[2, 3, 4], 300);
}

#[test]
fn dam_break_3d_on_2_and_3_devices_matches_1() {
    let case = case("dam_break_3d.toml", &["dp=0.06"]);
    compare(&case, &[2, 3], 60);
}

/// The layer of each fluid particle's position along the split axis, by id.
fn fluid_layers(case: &Case, s: &Snapshot) -> Vec<(u32, i32)> {
    let grid = Grid::new(case, case.split_axis()).unwrap();
    let mut v: Vec<(u32, i32)> = fluid(s).map(|i| (s.id[i], grid.locate(s.pos[i]).0[case.split_axis()])).collect();
    v.sort_unstable();
    v
}

#[test]
fn sloshing_particles_cross_slice_boundaries_both_ways() {
    // Water thrown against the right wall comes back: particles cross the boundaries of 3
    // slices to the right, then to the left.
    let case = case(
        "hydrostatic_2d.toml",
        &["decomposition.split_axis=\"x\"", "initial_velocity={kind=\"constant\",value=[1.5,0.0]}"],
    );
    let mut many = sim_devices(&case, 3);
    let mut one = sim_devices(&case, 1);
    let (mut right, mut left) = (0, 0);
    let bounds: Vec<i32> = many.reports().iter().map(|r| r.slice.1).collect();
    let owner = |l: i32| bounds.iter().position(|&b| l < b).unwrap_or(bounds.len() - 1);
    let mut before = fluid_layers(&case, &many.snapshot().unwrap());
    for _ in 0..40 {
        steps(&mut many, 50);
        steps(&mut one, 50);
        let now = fluid_layers(&case, &many.snapshot().unwrap());
        for ((_, a), (_, b)) in before.iter().zip(&now) {
            match owner(*b).cmp(&owner(*a)) {
                std::cmp::Ordering::Greater => right += 1,
                std::cmp::Ordering::Less => left += 1,
                _ => {}
            }
        }
        before = now;
        if right > 0 && left > 0 {
            break;
        }
    }
    assert!(right > 0 && left > 0, "crossings: {right} to the right, {left} to the left");
    assert_same_particles(&one.snapshot().unwrap(), &many.snapshot().unwrap(), "sloshing on 3 devices");
}

#[test]
fn a_slice_without_fluid_runs_and_matches() {
    // Cut along x by hand: the last slice holds the right wall and no fluid (the column
    // stands at the left end and does not reach it in these steps).
    let case = case("dam_break_2d.toml", &["decomposition.split_axis=\"x\"", "decomposition.balance=false"]);
    let grid = Grid::new(&case, 0).unwrap();
    let n = grid.layers();
    let map = surge_core::decomp::SliceMap { bounds: vec![0, 10, 20, n - 4, n], halo: grid.reach };
    let filled = surge_core::geometry::fill(&case);
    let layer: Vec<i32> = filled.pos.iter().map(|&x| grid.locate(x).0[0]).collect();
    let loaders = (0..4)
        .map(|d| {
            let part = filled.subset(|i| map.owner(layer[i]) == d);
            let case = case.clone();
            Box::new(move || {
                surge_cpu::CpuBackend::new(&case, &part, 1)
                    .map(|b| Box::new(b) as Box<dyn surge_core::backend::Backend>)
            }) as surge_runtime::team::Loader
        })
        .collect();
    let mut many = Simulation::team(case.clone(), map, grid.clone(), loaders).unwrap();
    let mut one = sim_on(&case, surge_runtime::BackendChoice::Cpu, 1);
    steps(&mut many, 200);
    steps(&mut one, 200);
    let s = many.snapshot().unwrap();
    let last = many.reports()[3].slice;
    assert_eq!(last, (n - 4, n));
    assert!(many.reports()[3].particles > 0, "the wall is there");
    let fluid_in_last = fluid(&s).filter(|&i| grid.locate(s.pos[i]).0[0] >= last.0).count();
    assert_eq!(fluid_in_last, 0, "the last slice should hold no fluid");
    assert_same_particles(&one.snapshot().unwrap(), &s, "with a slice without fluid");
}

#[test]
fn boundaries_moved_by_the_load_balancer_change_nothing() {
    // Threshold 0: every measured difference moves a boundary, every 10 steps.
    let case = case(
        "dam_break_2d.toml",
        &["decomposition.balance_every=10", "decomposition.balance_threshold=0.0", "decomposition.split_axis=\"x\""],
    );
    let many = compare(&case, &[3], 300);
    let moves: u64 = many.reports().iter().map(|r| r.moves).sum();
    assert!(moves >= 2, "the load balancer moved {moves} boundaries");
}

#[test]
fn too_many_devices_for_the_layers_is_a_clear_error() {
    let case = case("hydrostatic_2d.toml", &["decomposition.split_axis=\"x\""]);
    let req = surge_runtime::DeviceRequest::cpu_workers(8, 8);
    let e = surge_runtime::simulation(&case, &req).err().expect("refused");
    assert!(e.contains("8 devices need at least 24 cell layers"), "{e}");
    let periodic = common::case("taylor_green_2d.toml", &[]);
    let e =
        surge_runtime::simulation(&periodic, &surge_runtime::DeviceRequest::cpu_workers(2, 2)).err().expect("refused");
    assert!(e.contains("periodic along every axis"), "{e}");
}
