//! Transient Poiseuille and Couette flows against the series solutions of Morris, Fox & Zhu
//! (1997), on configs/poiseuille_2d.toml and configs/couette_2d.toml (20 particles across
//! the channel, their parameters). Tolerance: 5 % relative L2 error of the fluid velocity at
//! every time (the bound). Measured: Poiseuille 1.5-2.6 %, Couette 0.1-1.9 %.

mod common;
use common::*;

const TIMES: [f64; 5] = [0.0225, 0.045, 0.1125, 0.225, 1.0];
const TOLERANCE: f64 = 0.05;

/// Run a channel case and compare the fluid x-velocity with `analytic(y, t)` at each time.
fn check_channel(config: &str, label: &str, analytic: impl Fn(f64, f64) -> f64) {
    let case = case(config, &[]);
    let mut sim = sim(&case, 0);
    for t in TIMES {
        sim.advance_to(t).unwrap();
        let err = l2_error(&sim.snapshot().unwrap(), |y| analytic(y, t));
        println!("{label} t = {t} s: L2 error {:.2} %", 100.0 * err);
        assert!(err < TOLERANCE, "{label} at t = {t} s: L2 error {err:.4} above {TOLERANCE}");
    }
}

#[test]
fn poiseuille_matches_morris_series_solution() {
    check_channel("poiseuille_2d.toml", "Poiseuille", |y, t| poiseuille(y, t, 2e-4, 1e-6, 1e-3));
}

#[test]
fn couette_matches_morris_series_solution() {
    check_channel("couette_2d.toml", "Couette", |y, t| couette(y, t, 2.5e-5, 1e-6, 1e-3));
}
