//! Open boundaries (issue 15, `[[inlet]]` / `[[outlet]]`): buffer layers that make fluid at
//! inlets and take it away at outlets (Tafuni et al., CMAME 2018).
//!
//! - tests/cases/channel_2d.toml, laminar flow between plates fed by a parabolic inlet
//!   and drained at p = 0: the inlet delivers its prescribed flux and the channel's mass
//!   balance closes (in - out - change of stored mass) within 0.5 % of the inflow (the
//!   issue's bound); the steady profile is the parabola within 2 % (relative L2 error, the
//!   issue's bound; Re = U H / nu = 4).
//! - tests/cases/open_channel_2d.toml, a free-surface channel: the depth stays within 2 %
//!   of the inlet's and outlet's level (the bound).
//! - Bitwise the same on 1, 2 and 3 devices split across the planes, and across a restart.

mod common;

use common::*;
use surge_core::backend::Snapshot;
use surge_core::buffers::{Kind, ParticleState};
use surge_core::Case;
use surge_runtime::Simulation;

/// Particles of kinds `kinds` whose x lies in [lo, hi].
fn count_in(s: &Snapshot, kinds: &[Kind], lo: f64, hi: f64) -> u64 {
    (0..s.len())
        .filter(|&i| kinds.contains(&Kind::from_code(s.kind[i] as u32)) && s.pos[i][0] >= lo && s.pos[i][0] <= hi)
        .count() as u64
}

/// The mass balance of the channel between its planes x = 0 and x = L, in particles (all
/// of one mass): (prescribed inflow, measured outflow, change of stored mass) since `start`
/// ([`holds`] at t = 0).
fn balance(case: &Case, sim: &mut Simulation, start: (u64, u64)) -> (f64, f64, f64) {
    let s = sim.snapshot().unwrap();
    let inlet = &case.open[0];
    let outlet = &case.open[1];
    let (h, dp, t) = (inlet.max[1] - inlet.min[1], case.dp, sim.time());
    // The mean speed integrated over time (it ramps up: trapezoids of 1e-4 s are exact for
    // a piecewise linear series with breaks on that grid).
    let steps = (t / 1e-4).ceil() as usize;
    let dt = t / steps as f64;
    let volume: f64 = (0..steps)
        .map(|k| 0.5 * dt * (inlet.speed(k as f64 * dt).unwrap() + inlet.speed((k + 1) as f64 * dt).unwrap()))
        .sum::<f64>()
        * h;
    let prescribed = volume / (dp * dp);
    // What crossed the outlet plane: removed past the buffer, or in the buffer now.
    let beyond = count_in(&s, &[Kind::Fluid, Kind::Buffer], outlet.plane, f64::INFINITY);
    let out = (sim.open_counts()[1] + beyond) as f64 - start.1 as f64;
    let stored = count_in(&s, &[Kind::Fluid, Kind::Buffer], inlet.plane, outlet.plane);
    (prescribed, out, stored as f64 - start.0 as f64)
}

/// What the channel holds between its planes and beyond the outlet's plane.
fn holds(case: &Case, s: &Snapshot) -> (u64, u64) {
    let (inlet, outlet) = (&case.open[0], &case.open[1]);
    let k = [Kind::Fluid, Kind::Buffer];
    (count_in(s, &k, inlet.plane, outlet.plane), count_in(s, &k, outlet.plane, f64::INFINITY))
}

#[test]
fn an_inlet_delivers_its_flux_and_the_channel_balances_its_mass() {
    let case = case_at("tests/cases/channel_2d.toml", &["time.end=0.6"]);
    let mut sim = sim(&case, 0);
    let start = holds(&case, &sim.snapshot().unwrap());
    assert_eq!(start, (2000, 80), "the channel starts full: 100 x 20 particles, and 4 x 20 in the outlet");
    for t in [0.3, 0.6] {
        sim.advance_to(t).unwrap();
        let (prescribed, out, change) = balance(&case, &mut sim, start);
        let error = (prescribed - out - change) / prescribed;
        println!(
            "t = {t} s: inflow {prescribed:.1}, outflow {out}, stored {change:+}, balance {:.3} % of the inflow; made {}",
            100.0 * error,
            sim.open_counts()[0]
        );
        // Over the run (the bound); at 0.3 s it is printed only: 400 particles in,
        // and each column crosses the plane a particle at a time.
        if t == case.end_time {
            assert!(error.abs() < 0.005, "t = {t} s: mass balance off by {:.3} % of the inflow", 100.0 * error);
        }
    }
    let [made, gone] = sim.open_counts();
    assert!(made > 900 && gone > 900, "particles flowed through: made {made}, out {gone}");
}

/// Ids stay unique while inlets make particles (every particle's id once).
#[test]
fn ids_stay_unique_as_the_inlet_makes_particles() {
    let case = case_at("tests/cases/channel_2d.toml", &["time.end=0.3"]);
    let mut sim = sim(&case, 0);
    sim.advance_to(0.3).unwrap();
    let s = sim.snapshot().unwrap();
    let mut ids = s.id.clone();
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate ids");
    assert!(sim.open_counts()[0] > 300, "the inlet made {} particles", sim.open_counts()[0]);
}

#[test]
fn open_boundaries_are_bitwise_the_same_on_1_2_and_3_devices_and_across_a_restart() {
    let case = case_at("tests/cases/channel_2d.toml", &["time.end=0.25"]);
    let mut one = sim_devices(&case, 1);
    run_to(&mut one, case.end_time);
    let reference = one.snapshot().unwrap();
    for n in [2, 3] {
        let mut many = sim_devices(&case, n);
        run_to(&mut many, case.end_time);
        assert_eq!(many.open_counts(), one.open_counts(), "{n} devices: counts");
        assert_same_particles(&many.snapshot().unwrap(), &reference, &format!("{n} devices"));
    }
    let mut first = sim_devices(&case, 2);
    run_to(&mut first, 0.12);
    let mut particles = ParticleState::default();
    first.export_particles(&mut particles).unwrap();
    let mut second = sim_devices(&case, 3);
    second.restore(first.step_state(), particles).unwrap();
    run_to(&mut second, case.end_time);
    assert_eq!(second.open_counts(), one.open_counts(), "restarted: counts");
    assert_same_particles(&second.snapshot().unwrap(), &reference, "restarted");
}

/// Re = 4, 2.5 viscous times H²/nu from rest: the profile mid-channel against 6 U s (1 - s),
/// with mDBC no-slip plates (DBC's plates sit half a spacing off the boundary particles, a
/// relative L2 error of 2.8 % at 20 particles across; mDBC: 0.4 %, both on the CPU).
#[test]
fn the_steady_channel_profile_is_the_parabola() {
    let case = case_at(
        "tests/cases/channel_2d.toml",
        &[
            "time.end=2.0",
            "physics.viscosity={kind=\"laminar\",nu=5e-4}",
            "physics.eos={c0=5.0}",
            "physics.boundary={kind=\"mdbc\"}",
        ],
    );
    let mut sim = sim_on(&case, test_backend(), 0);
    sim.advance_to(case.end_time).unwrap();
    let s = sim.snapshot().unwrap();
    let (u, h) = (0.1, 0.02);
    let (mut num, mut den) = (0.0, 0.0);
    for i in fluid(&s).filter(|&i| (s.pos[i][0] - 0.05).abs() < 0.03) {
        let y = s.pos[i][1] / h;
        let ua = 6.0 * u * y * (1.0 - y);
        num += (s.vel[i][0] as f64 - ua).powi(2);
        den += ua * ua;
    }
    let err = (num / den).sqrt();
    println!("channel profile: relative L2 error {:.2} %", 100.0 * err);
    assert!(err < 0.02, "relative L2 error {:.2} % of the parabola", 100.0 * err);
}

/// The free-surface channel keeps its depth: every depth gauge over the last second within
/// 2 % of the level.
#[test]
fn a_free_surface_channel_keeps_its_depth() {
    let case = case_at("tests/cases/open_channel_2d.toml", &[]);
    let mut sim = sim_on(&case, test_backend(), 0);
    let level = 0.1;
    let mut worst: f64 = 0.0;
    let mut t = 1.0;
    sim.advance_to(t).unwrap();
    while t < case.end_time - 1e-9 {
        t += 0.1;
        sim.advance_to(t).unwrap();
        for d in sim.gauges().unwrap() {
            worst = worst.max((d - level).abs() / level);
        }
    }
    println!("free-surface channel: worst depth error {:.2} %", 100.0 * worst);
    assert!(worst < 0.02, "the depth strays {:.2} % from the level", 100.0 * worst);
}
