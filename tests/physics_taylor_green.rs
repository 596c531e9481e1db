//! Taylor–Green vortex at Re = 100 on the unit periodic square (configs/taylor_green_2d.toml,
//! 40 x 40 particles): kinetic energy against exp(-16 pi² t / Re) up to t = 1.
//!
//! Weakly-compressible SPH without a transport-velocity correction over-dissipates this flow
//! (the lattice is stretched at the stagnation points) and converges slowly (Negi &
//! Ramachandran 2021, "Techniques for second order convergent WCSPH schemes without
//! boundaries", study exactly this). What the test holds on to, as physics: the error falls
//! as the resolution rises — at t = 1 it must be at least 5 % smaller at 56² than at 40²
//! (measured -16.3 % against -18.9 %; -12 % at 80²). Measured at 40², h = 2 dp, Lind shifting
//! A = 10: energy error -7.7 % at t = 0.2, -19 % at t = 1; the decay rate between t = 0.2 and 1
//! gives an effective viscosity 10 % above nu. The bounds 25 % (energy) and 15 % (viscosity)
//! guard these measured values; they are not literature tolerances.

mod common;
use common::*;
use std::f64::consts::PI;

#[test]
fn taylor_green_energy_decay() {
    let case = case("taylor_green_2d.toml", &[]);
    let re = 100.0;
    let mut sim = sim(&case, 0);
    let e0 = kinetic_energy(&sim.snapshot().unwrap());
    let mut e = Vec::new();
    for k in 1..=5 {
        let t = 0.2 * k as f64;
        sim.advance_to(t).unwrap();
        let ratio = kinetic_energy(&sim.snapshot().unwrap()) / e0;
        let exact = (-16.0 * PI * PI * t / re).exp();
        let err = ratio / exact - 1.0;
        println!("t = {t:.1}: E/E0 = {ratio:.4}, analytic {exact:.4}, error {:.1} %", 100.0 * err);
        assert!(err.abs() < 0.25, "t = {t}: energy error {err:.3}");
        e.push(ratio);
    }
    let nu_eff = (e[0] / e[4]).ln() / (16.0 * PI * PI * 0.8);
    let nu = 1.0 / re;
    println!("effective viscosity from the decay rate {nu_eff:.5} (nu = {nu})");
    assert!((nu_eff / nu - 1.0).abs() < 0.15, "effective viscosity {nu_eff} against {nu}");
}

/// Energy error at t = 1 for a particle spacing of `dp`.
fn error_at_t1(dp: f64) -> f64 {
    let case = case("taylor_green_2d.toml", &[&format!("dp={dp}")]);
    let mut sim = sim(&case, 0);
    let e0 = kinetic_energy(&sim.snapshot().unwrap());
    sim.advance_to(1.0).unwrap();
    let ratio = kinetic_energy(&sim.snapshot().unwrap()) / e0;
    ratio / (-16.0 * PI * PI / 100.0f64).exp() - 1.0
}

#[test]
fn taylor_green_error_falls_with_resolution() {
    let coarse = error_at_t1(1.0 / 40.0);
    let fine = error_at_t1(1.0 / 56.0);
    println!("energy error at t = 1: {:.2} % at 40², {:.2} % at 56²", 100.0 * coarse, 100.0 * fine);
    assert!(fine.abs() < 0.95 * coarse.abs(), "no convergence: {coarse} at 40², {fine} at 56²");
}
