//! The log-law wall function (`physics.wall_function = { kind = "log_law" }`) against the law
//! it models, on tests/cases/log_layer_3d.toml: water 0.06 m deep sliding over a free-slip
//! mDBC floor at dp 6 mm (Test 2's benchmark resolution), periodic along x and y, started in
//! the smooth-wall law's profile at friction velocity u*. In that profile every particle
//! finds the same u* from its own slip and distance, so the floor must take the layer's
//! x-momentum at the law's wall shear, `d(P/A)/dt = -rho u*²`, whatever the rows' weights.
//!
//! Tolerance 2 %: the lattice's quadrature of the kernel's surface integral (the column's
//! `sum V S = 1/2`, within 1 % in the unit test `the_column_takes_the_walls_shear_per_unit_area`)
//! and the near-wall rows' own slowing over the 4-ms window (measured: the rate falls 0.3 %
//! per 2 ms at u* 0.15 m/s, as the first row loses speed and so u*). Measured on the CPU:
//! +0.3 % at u* 0.05 m/s, -0.5 % at 0.15 m/s. Without the wall function the free-slip floor keeps the momentum:
//! bound 1 % of rho u*² at 0.15 m/s (measured 0.2 %, the lattice's pressure forces as the layer slides
//! over the floor's particles).

mod common;
use common::*;

/// The rate at which the fluid loses x-momentum per unit of floor area (Pa) between t = 0
/// and `t`, on the log layer with `overrides`; and rho u*².
fn loss_rate(overrides: &[&str], t: f64) -> (f64, f64) {
    let case = case_at("tests/cases/log_layer_3d.toml", overrides);
    let surge_core::case::Initial::LogLaw { u_star, .. } = case.initial else {
        panic!("the log layer starts in the log law's profile")
    };
    let area = (case.domain.max[0] - case.domain.min[0]) * (case.domain.max[1] - case.domain.min[1]);
    let m = case.mass;
    let mut sim = sim(&case, 0);
    let momentum = |sim: &mut surge_runtime::Simulation| {
        let s = sim.snapshot().unwrap();
        fluid(&s).map(|i| m * s.vel[i][0] as f64).sum::<f64>() / area
    };
    let p0 = momentum(&mut sim);
    run_to(&mut sim, t);
    let p1 = momentum(&mut sim);
    (-(p1 - p0) / sim.time(), case.rho0 * u_star * u_star)
}

/// The law's wall shear at two friction velocities (the front of Test 2 and a slower flow:
/// the shear goes as u*², nine times between them).
#[test]
fn the_floor_takes_a_log_layer_at_the_laws_wall_shear() {
    for u_star in [0.05, 0.15] {
        let set = format!("initial_velocity.u_star={u_star}");
        let (rate, law) = loss_rate(&[&set], 0.004);
        let err = rate / law - 1.0;
        println!("u* {u_star} m/s: momentum lost at {rate:.3} Pa, rho u*² {law:.3} Pa ({:+.2} %)", 100.0 * err);
        assert!(err.abs() < 0.02, "u* {u_star}: {rate} Pa against the law's {law} Pa");
    }
}

/// Without the wall function the free-slip floor takes no shear: the control of the test
/// above (what it measures is the function's, not the floor's pressure or the lattice's).
#[test]
fn without_the_wall_function_the_free_slip_floor_keeps_the_momentum() {
    let (rate, law) = loss_rate(&[r#"physics.wall_function={kind="none"}"#], 0.004);
    println!("free slip: momentum lost at {rate:.4} Pa ({:+.2} % of rho u*² {law:.3} Pa)", 100.0 * rate / law);
    assert!(rate.abs() < 0.01 * law, "free slip lost momentum at {rate} Pa");
}
