//! The cell-stencil neighbour search finds exactly the pairs a brute-force N² search finds,
//! also across periodic boundaries and after particles moved (between rebuilds, inside the
//! skin), in 2D and 3D.

use surge_core::backend::Backend;
use surge_core::geometry::fill;
use surge_core::Case;
use surge_cpu::CpuBackend;

fn brute_force(be: &CpuBackend, i: usize) -> Vec<usize> {
    let g = be.grid();
    let a = be.arrays();
    let xi = g.absolute(a.cell[i], a.pos[i]);
    let mut out = Vec::new();
    for j in 0..a.len() {
        let xj = g.absolute(a.cell[j], a.pos[j]);
        let mut r2 = 0.0;
        for ax in 0..g.dim {
            let mut d = xi[ax] - xj[ax];
            if g.periodic[ax] {
                let len = g.n[ax] as f64 * g.cell[ax];
                d -= (d / len).round() * len;
            }
            r2 += d * d;
        }
        // Pairs within a hair of the support may round either way in float32: skip them.
        let s2 = g.support * g.support;
        if j != i && r2 < s2 * (1.0 - 1e-5) {
            out.push(j);
        } else if j != i && r2 < s2 * (1.0 + 1e-5) {
            out.push(usize::MAX);
        }
    }
    out
}

fn check(text: &str, steps: usize) {
    let case = Case::from_str(text, &[]).unwrap();
    let mut be = CpuBackend::new(&case, &fill(&case), 2).unwrap();
    for _ in 0..steps {
        be.forces(surge_core::backend::Part::Edges).unwrap();
        be.forces(surge_core::backend::Part::Inner).unwrap();
        be.update(surge_core::backend::Update::VerletEuler, 2e-4).unwrap();
    }
    let n = be.len();
    for i in (0..n).step_by(7) {
        let mut grid = be.neighbours_of(i);
        let mut brute = brute_force(&be, i);
        let marginal = brute.iter().filter(|&&j| j == usize::MAX).count();
        brute.retain(|&j| j != usize::MAX);
        grid.sort_unstable();
        brute.sort_unstable();
        if marginal == 0 {
            assert_eq!(grid, brute, "neighbours of particle {i}");
        } else {
            assert!(brute.iter().all(|j| grid.contains(j)), "neighbours of particle {i}");
        }
    }
}

#[test]
fn stencil_search_equals_brute_force_2d_with_walls() {
    check(include_str!("../../../configs/dam_break_2d.toml").replace("dp = 0.02", "dp = 0.05").as_str(), 20);
}

#[test]
fn stencil_search_equals_brute_force_3d() {
    check(include_str!("../../../configs/dam_break_3d.toml").replace("dp = 0.04", "dp = 0.08").as_str(), 10);
}

#[test]
fn stencil_search_equals_brute_force_periodic() {
    check(include_str!("../../../configs/taylor_green_2d.toml"), 20);
}
