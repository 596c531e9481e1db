//! Transient Poiseuille and Couette flows against the series solutions of Morris, Fox & Zhu
//! (1997), on configs/poiseuille_2d.toml and configs/couette_2d.toml (20 particles across
//! the channel, their parameters). Tolerance: 5 % relative L2 error of the fluid velocity at
//! every time (the issue's bound). Measured: Poiseuille 1.5-2.6 %, Couette 0.1-1.9 %; with
//! mDBC no-slip walls instead of Morris' mirrored velocity, Poiseuille 0.9-2.0 %, Couette
//! 0.0-1.4 %.

mod common;
use common::*;

const TIMES: [f64; 5] = [0.0225, 0.045, 0.1125, 0.225, 1.0];
const TOLERANCE: f64 = 0.05;

/// Run a channel case and compare the fluid x-velocity with `analytic(y, t)` at each time.
fn check_channel(config: &str, overrides: &[&str], label: &str, analytic: impl Fn(f64, f64) -> f64) {
    let case = case(config, overrides);
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
    check_channel("poiseuille_2d.toml", &[], "Poiseuille", |y, t| poiseuille(y, t, 2e-4, 1e-6, 1e-3));
}

#[test]
fn couette_matches_morris_series_solution() {
    check_channel("couette_2d.toml", &[], "Couette", |y, t| couette(y, t, 2.5e-5, 1e-6, 1e-3));
}

/// mDBC no-slip walls (`physics.boundary = {kind = "mdbc"}`): the viscous term sees the
/// ghost node's velocity mirrored through the wall's (`2 v_wall - v_ghost`) instead of Morris'
/// mirrored velocity, which puts the no-slip condition on the wall surface too. Same bound.
#[test]
fn poiseuille_with_mdbc_walls_matches_morris_series_solution() {
    let mdbc = [r#"physics.boundary={kind="mdbc"}"#];
    check_channel("poiseuille_2d.toml", &mdbc, "Poiseuille (mDBC)", |y, t| poiseuille(y, t, 2e-4, 1e-6, 1e-3));
}

/// mDBC no-slip walls, the upper one moving (its velocity enters `2 v_wall - v_ghost`).
#[test]
fn couette_with_mdbc_walls_matches_morris_series_solution() {
    let mdbc = [r#"physics.boundary={kind="mdbc"}"#];
    check_channel("couette_2d.toml", &mdbc, "Couette (mDBC)", |y, t| couette(y, t, 2.5e-5, 1e-6, 1e-3));
}

/// mDBC free-slip walls (`slip = true`): the walls exert no shear, so the body force
/// accelerates the whole channel alike, `u = f t`, where no-slip walls hold a Poiseuille
/// profile. Bound: 1 % relative L2 error. Measured: below 0.001 % (the ghosts reproduce a
/// uniform velocity to rounding, and free slip hands it back unchanged along the wall;
/// no-slip walls slow the fluid beside them).
#[test]
fn free_slip_mdbc_walls_let_the_channel_slide() {
    let case = case("poiseuille_2d.toml", &[r#"physics.boundary={kind="mdbc",slip=true}"#]);
    let mut sim = sim(&case, 0);
    for t in [0.0225, 0.1125] {
        sim.advance_to(t).unwrap();
        let err = l2_error(&sim.snapshot().unwrap(), |_| 2e-4 * t);
        println!("free slip t = {t} s: L2 error against u = f t {:.3} %", 100.0 * err);
        assert!(err < 0.01, "free slip at t = {t} s: L2 error {err:.4}");
    }
}

/// mDBC walls of two slips (`slip` of a `[[wall]]`): the lower wall no-slip, the upper one
/// free slip. The free-slip wall holds no shear, as the centre line of a channel twice as
/// wide does, so the flow is the lower half of Morris' Poiseuille flow between plates 2L
/// apart (an open-channel flow). Same bound as the other channels.
#[test]
fn a_free_slip_wall_over_a_no_slip_wall_is_half_of_a_wider_channel() {
    let walls = [
        r#"physics.boundary={kind="mdbc"}"#,
        r#"wall=[{min=[0.0,0.0], max=[0.001,0.001], faces=["y-"]}, {min=[0.0,0.0], max=[0.001,0.001], faces=["y+"], slip=true}]"#,
    ];
    check_channel("poiseuille_2d.toml", &walls, "Poiseuille under a free-slip wall", |y, t| {
        poiseuille(y, t, 2e-4, 1e-6, 2e-3)
    });
}
