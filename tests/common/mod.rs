//! Shared helpers of the physics tests: loading shipped cases, analytic solutions.
#![allow(dead_code)]

use std::f64::consts::PI;
use std::path::Path;
use surge_core::backend::Snapshot;
use surge_core::buffers::Kind;
use surge_core::Case;
use surge_runtime::Simulation;

/// Load a shipped case with `--set`-style overrides.
pub fn case(name: &str, overrides: &[&str]) -> Case {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs").join(name);
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    Case::from_file(&path, &o).unwrap_or_else(|e| panic!("{e}"))
}

/// The case on the CPU backend with `threads` threads.
pub fn sim(case: &Case, threads: usize) -> Simulation {
    surge_runtime::cpu_simulation(case, threads).unwrap_or_else(|e| panic!("{e}"))
}

/// Indices of the fluid particles of a snapshot.
pub fn fluid(s: &Snapshot) -> impl Iterator<Item = usize> + '_ {
    (0..s.len()).filter(|&i| s.kind[i] == Kind::Fluid as u8)
}

/// Transient plane Poiseuille flow from rest (Morris, Fox & Zhu 1997, eq. 22): plates at
/// y = 0 and y = l, body force f along x, kinematic viscosity nu.
pub fn poiseuille(y: f64, t: f64, f: f64, nu: f64, l: f64) -> f64 {
    let mut u = f / (2.0 * nu) * y * (l - y);
    for n in 0..200 {
        let k = (2 * n + 1) as f64;
        u -= 4.0 * f * l * l / (nu * PI.powi(3) * k.powi(3))
            * (k * PI * y / l).sin()
            * (-k * k * PI * PI * nu * t / (l * l)).exp();
    }
    u
}

/// Transient Couette flow from rest (Morris, Fox & Zhu 1997, eq. 23): the plate at y = l
/// moves at v0 from t = 0, the plate at y = 0 is fixed.
pub fn couette(y: f64, t: f64, v0: f64, nu: f64, l: f64) -> f64 {
    let mut u = v0 * y / l;
    for n in 1..400 {
        let nf = n as f64;
        u += 2.0 * v0 / (nf * PI)
            * (-1f64).powi(n)
            * (nf * PI * y / l).sin()
            * (-nu * nf * nf * PI * PI * t / (l * l)).exp();
    }
    u
}

/// Relative L2 error of the fluid x-velocity against an analytic profile u(y).
pub fn l2_error(s: &Snapshot, u: impl Fn(f64) -> f64) -> f64 {
    let (mut num, mut den) = (0.0, 0.0);
    for i in fluid(s) {
        let ua = u(s.pos[i][1]);
        num += (s.vel[i][0] as f64 - ua).powi(2);
        den += ua * ua;
    }
    (num / den).sqrt()
}

/// Kinetic energy per unit mass summed over the fluid (equal masses).
pub fn kinetic_energy(s: &Snapshot) -> f64 {
    fluid(s).map(|i| s.vel[i].iter().map(|v| (*v as f64).powi(2)).sum::<f64>()).sum::<f64>() / 2.0
}
