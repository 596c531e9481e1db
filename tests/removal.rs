//! Particles that leave the domain (`[domain] on_exit`, `max_removed`): a jet thrown out of
//! an open box (tests/cases/jet_2d.toml) is removed at rebuilds and counted, not fatal.
//! Checks are exact: fluid particles remaining + removed = the initial fluid (every fluid
//! particle has the same mass, so this is the mass balance), removal is bitwise the same on
//! 1, 2 and 3 devices and across a restart, and the two ways to stop say why. A fluid
//! particle whose density leaves `domain.density_range` is taken out the same way. A run
//! whose time step collapses (an instability) stops too, and says so.

mod common;

use common::*;
use surge_core::backend::Failure;
use surge_core::buffers::ParticleState;
use surge_core::geometry::counts;
use surge_core::Case;
use surge_runtime::Simulation;

fn jet(overrides: &[&str]) -> Case {
    let path = repo_file("tests/cases/jet_2d.toml");
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Case::from_file(&path, &o).unwrap_or_else(|e| panic!("{e}"))
}

fn fluid_left(sim: &mut Simulation) -> u64 {
    let s = sim.snapshot().unwrap();
    fluid(&s).count() as u64
}

#[test]
fn a_jet_out_of_an_open_box_is_removed_and_counted() {
    let case = jet(&[]);
    let initial = counts(&case).fluid;
    let mut sim = sim(&case, 2);
    run_to(&mut sim, case.end_time);
    let (left, removed) = (fluid_left(&mut sim), sim.removed());
    assert!(removed > 10 && left > 10, "the jet should lose part of its fluid: {removed} removed, {left} left");
    assert_eq!(left + removed, initial, "remaining + removed must be the initial fluid exactly");
    assert_eq!(by_density(&sim), 0, "the jet's fluid left the domain: none went for its density");
}

/// Of [`Simulation::removed`], the fluid particles the devices took out for their density
/// (summary.json's per-device `removed_for_density`, added up).
fn by_density(sim: &Simulation) -> u64 {
    sim.reports().iter().map(|r| r.removed_for_density).sum()
}

/// The case of `case_split` (split along x, then y) on 1, 2 and 3 devices to its end: some
/// fluid removed, the same count and bitwise the same particles.
fn removal_bitwise_on_1_2_and_3_devices(case_split: impl Fn(&str) -> Case) {
    for split in ["x", "y"] {
        let case = case_split(&format!("decomposition.split_axis=\"{split}\""));
        let mut one = sim_devices(&case, 1);
        run_to(&mut one, case.end_time);
        let reference = one.snapshot().unwrap();
        assert!(one.removed() > 0);
        for n in [2, 3] {
            let mut many = sim_devices(&case, n);
            run_to(&mut many, case.end_time);
            assert_eq!(many.removed(), one.removed(), "{n} devices split along {split}: removed count");
            assert_same_particles(&many.snapshot().unwrap(), &reference, &format!("{n} devices along {split}"));
        }
    }
}

#[test]
fn removal_is_bitwise_the_same_on_1_2_and_3_devices() {
    removal_bitwise_on_1_2_and_3_devices(|split| jet(&[split]));
}

#[test]
fn a_restart_after_removals_continues_bitwise() {
    let case = jet(&[]);
    let mut straight = sim(&case, 2);
    run_to(&mut straight, case.end_time);

    let mut first = sim(&case, 2);
    run_to(&mut first, 0.25);
    assert!(first.removed() > 0, "the checkpoint should fall after some removals");
    let mut particles = ParticleState::default();
    first.export_particles(&mut particles).unwrap();
    let state = first.step_state();
    let mut second = sim(&case, 1);
    second.restore(state, particles).unwrap();
    assert_eq!(second.removed(), first.removed());
    run_to(&mut second, case.end_time);
    assert_eq!(second.removed(), straight.removed());
    assert_same_particles(&second.snapshot().unwrap(), &straight.snapshot().unwrap(), "restarted");
}

#[test]
fn on_exit_stop_names_the_particle_that_left() {
    let case = jet(&["domain.on_exit=\"stop\""]);
    let mut sim = sim(&case, 2);
    let e = loop {
        if let Err(e) = sim.step(f64::INFINITY) {
            break e;
        }
        assert!(sim.time() < case.end_time, "the jet should leave the domain");
    };
    assert!(e.diverged());
    assert!(matches!(e.failure, Failure::Particle(_)), "{e}");
    assert!(e.to_string().contains("left the domain"), "{e}");
    // The state at failure (the run's last frame) holds every particle, the named one
    // outside the domain: on a GPU alone it once held none.
    let Failure::Particle(bad) = &e.failure else { unreachable!() };
    let s = sim.snapshot().unwrap();
    assert_eq!(s.id.len() as u64, counts(&case).total(), "every particle in the state at failure");
    let k = s.id.iter().position(|&id| id == bad.id).expect("the named particle in the state at failure");
    let outside = (0..case.dim).any(|a| s.pos[k][a] < case.domain.min[a] || s.pos[k][a] > case.domain.max[a]);
    assert!(outside, "particle {} at {:?} should lie outside the domain", bad.id, s.pos[k]);
}

#[test]
fn the_run_stops_when_more_than_the_allowed_share_left() {
    let case = jet(&["domain.max_removed=0.1"]);
    let initial = counts(&case).fluid;
    let mut sim = sim(&case, 2);
    let e = loop {
        if let Err(e) = sim.step(f64::INFINITY) {
            break e;
        }
        assert!(sim.time() < case.end_time, "more than 10 % of the jet should leave");
    };
    match e.failure {
        Failure::Leaving { removed, fluid, share } => {
            assert_eq!((fluid, share), (initial, 0.1));
            assert!(removed as f64 > 0.1 * initial as f64);
        }
        ref f => panic!("expected the share to stop the run, got {f}"),
    }
    assert!(e.to_string().contains("domain.max_removed"), "{e}");
}

/// The Verlet scheme steps the density diffusion by a centred difference over two steps,
/// which damps nothing and amplifies the short waves of a diffusion term; its Euler step every
/// 40 steps holds them down at delta 0.1 but not at 0.5: the step falls from 1.4e-4 s to
/// 2.5e-10 s within 42 steps. The run stops there, not crawls on, and says why; the
/// symplectic scheme, stable with it, runs on.
#[test]
fn a_run_whose_time_step_collapses_stops_and_says_why() {
    // The density range off: it would take out the particles running away (the test below).
    let overrides = ["physics.density_diffusion.delta=0.5", "time.end=0.3", "domain.density_range=[-inf, inf]"];
    let unstable = case("dam_break_2d.toml", &[overrides[0], overrides[1], overrides[2], r#"time.scheme="verlet""#]);
    let mut s = sim(&unstable, 2);
    let e = loop {
        if let Err(e) = s.step(f64::INFINITY) {
            break e;
        }
        assert!(s.time() < 0.05, "delta 0.5 with Verlet should collapse within 0.05 s");
    };
    match e.failure {
        Failure::StepCollapsed { dt, at_rest } => {
            assert_eq!(at_rest, unstable.initial_dt());
            assert!(dt < surge_core::backend::DT_COLLAPSE * at_rest, "{dt} against {at_rest}");
        }
        ref f => panic!("expected the collapsed step to stop the run, got {f}"),
    }
    assert!(e.diverged());
    assert!(e.to_string().contains("time step fell") && e.to_string().contains("delta"), "{e}");
    // The same case with the symplectic scheme takes steps near its step at rest.
    let stable = case("dam_break_2d.toml", &overrides);
    let mut s = sim(&stable, 2);
    for _ in 0..200 {
        s.step(f64::INFINITY).unwrap_or_else(|e| panic!("symplectic with delta 0.5: {e}"));
        assert!(s.dt() > 0.2 * stable.initial_dt(), "symplectic: dt {} at t = {}", s.dt(), s.time());
    }
}

/// `domain.density_range` (DualSPHysics' `RhopOut`): a fluid particle whose density leaves
/// the range is taken out at the next rebuild, as one that left the domain. The 2D dam
/// break with a range narrower than its column's hydrostatic densities ([0.995, 1.005]
/// times rho0: the bottom metre of the 2 m column lies above 1.005): each step that
/// rebuilds removes exactly the fluid particles whose density lay outside the range at the
/// step's start (a rebuild comes first in a step), every other step none; remaining +
/// removed = the initial fluid exactly.
#[test]
fn a_density_outside_its_range_is_removed_at_the_rebuild_and_counted() {
    let c = case("dam_break_2d.toml", &["domain.density_range=[0.995, 1.005]", "domain.max_removed=1.0"]);
    let (b, rho0) = (c.density_bounds(), c.rho0 as f32);
    let initial = counts(&c).fluid;
    let mut s = sim(&c, 2);
    let (mut rebuilds_that_removed, mut steps) = (0, 0);
    while s.time() < 0.1 {
        let before = s.snapshot().unwrap();
        let out = fluid(&before).filter(|&i| Case::density_out(b, before.rho[i] / rho0 - 1.0)).count() as u64;
        let removed = s.removed();
        s.step(f64::INFINITY).unwrap_or_else(|e| panic!("{e}"));
        let now = s.removed() - removed;
        assert!(now == 0 || now == out, "step {steps}: {now} removed, {out} fluid particles outside the range");
        rebuilds_that_removed += (now > 0) as u32;
        steps += 1;
    }
    assert!(rebuilds_that_removed >= 2, "{rebuilds_that_removed} rebuilds removed particles in {steps} steps");
    assert!(s.removed() as f64 > 0.3 * initial as f64, "the bottom half should go: {} removed", s.removed());
    assert_eq!(fluid_left(&mut s) + s.removed(), initial, "remaining + removed must be the initial fluid exactly");
    assert_eq!(by_density(&s), s.removed(), "in the closed tank every removal is for density, on either device");
    // With the default range [0.7, 1.3] nothing goes in this flow.
    let mut d = sim(&case("dam_break_2d.toml", &[]), 2);
    run_to(&mut d, 0.1);
    assert_eq!(d.removed(), 0);
}

/// Removal for density is bitwise the same on 1, 2 and 3 devices (the rekey of each owned
/// particle decides alone, at rebuilds that every device makes at the same step), and with
/// `on_exit = "stop"` the run names the particle and the range.
#[test]
fn removal_for_density_is_bitwise_across_devices_and_stop_names_it() {
    let range = "domain.density_range=[0.995, 1.005]";
    removal_bitwise_on_1_2_and_3_devices(|split| {
        case("dam_break_2d.toml", &[range, "domain.max_removed=1.0", "time.end=0.06", split])
    });
    let c = case("dam_break_2d.toml", &[range, r#"domain.on_exit="stop""#]);
    let mut s = sim(&c, 2);
    let e = loop {
        if let Err(e) = s.step(f64::INFINITY) {
            break e;
        }
        assert!(s.time() < 0.1, "a density should leave the range");
    };
    assert!(matches!(e.failure, Failure::Particle(_)), "{e}");
    assert!(e.to_string().contains("density outside domain.density_range"), "{e}");
}
