//! Loads on solids at sample times: a loop over owned boundary particles of chosen id
//! ranges, reading their fluid neighbours through the cell table. Never part of a step.

use crate::forces::for_each_neighbour_of;
use rayon::prelude::*;
use std::ops::Range;
use surge_core::bodies::{contact_force, pair_contact, BodyLoad};
use surge_core::buffers::{Kind, ParticleArrays};
use surge_core::case::Case;
use surge_core::gauge::ParticleLoad;
use surge_core::grid::Grid;
use surge_core::physics::constants::Constants;
use surge_core::physics::kernel::SmoothingKernel;
use surge_core::physics::options::{BoundaryModel, DiffusionModel, ShiftingModel, ViscosityModel};
use surge_core::physics::pair::{dispatch, PairParticle, Physics, WithPhysics};
use surge_core::V3;

struct Loads<'a> {
    consts: &'a Constants,
    grid: &'a Grid,
    whole: &'a Grid,
    cell_start: &'a [u32],
    a: &'a ParticleArrays,
    own: Range<usize>,
    ids: &'a [Range<u32>],
    /// Floating bodies (`ids` are theirs, in order) and the spacing: each particle's load
    /// adds its contacts with other solids' particles.
    contacts: Option<(&'a [BodyLoad], f32)>,
}

/// The fluid's force on each owned boundary particle (`own`) whose id lies in one of `ids`,
/// where it is not zero, in storage order ([`surge_core::gauge::Interpolate::boundary_loads`]).
/// `grid` is the device's window (cell table), `whole` the whole grid (absolute positions).
/// With `contacts` (floating bodies, `ids` theirs, and dp), each particle's load adds its
/// contacts with other solids' particles ([`surge_core::bodies::contact_force`]): the CPU
/// twin of `body_loads_kernel`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn boundary_loads(
    case: &Case,
    consts: &Constants,
    grid: &Grid,
    whole: &Grid,
    cell_start: &[u32],
    a: &ParticleArrays,
    own: Range<usize>,
    ids: &[Range<u32>],
    contacts: Option<(&[BodyLoad], f32)>,
) -> Vec<ParticleLoad> {
    dispatch(case, consts, Loads { consts, grid, whole, cell_start, a, own, ids, contacts })
}

impl WithPhysics for Loads<'_> {
    type Output = Vec<ParticleLoad>;

    fn call<
        K: SmoothingKernel,
        V: ViscosityModel,
        D: DiffusionModel,
        S: ShiftingModel,
        B: BoundaryModel,
        const DIM: usize,
    >(
        self,
        ph: Physics<K, V, D, S, B, DIM>,
    ) -> Vec<ParticleLoad> {
        let Loads { consts: eos, grid, whole, cell_start, a, own, ids, contacts } = self;
        let ParticleArrays { pos, vel, cell, info, wall, mdbc, .. } = a;
        let particle = |j: usize| PairParticle {
            vel: V3::from4(vel[j]),
            rho: eos.density(vel[j][3]),
            p: eos.pressure(vel[j][3]),
            m: pos[j][3],
            wall: if V::MIRROR_WALL && !B::MDBC { wall[j] } else { [0.0; 4] },
            // mDBC: the viscous velocity of the last mDBC pass (read for boundary particles).
            mdbc: if B::MDBC { mdbc[j] } else { [0.0; 4] },
        };
        own.into_par_iter()
            .filter(|&i| info[i][1] == Kind::Boundary as u32 && ids.iter().any(|r| r.contains(&info[i][0])))
            .filter_map(|i| {
                let pb = particle(i);
                // The fluid's load, and apart (added last) a body's contacts with other
                // solids' particles closer than dp: the twin of the kernels' fluid_load.
                let (mut f, mut fc) = (V3::default(), V3::default());
                let body = contacts.map(|(bodies, dp)| {
                    let id = info[i][0];
                    (bodies, dp, bodies.iter().find(|b| b.ids.contains(&id)).expect("a body's particle"))
                });
                let oi = V3::from4(pos[i]);
                for_each_neighbour_of::<DIM>(grid, cell_start, pos, cell[i], oi, body.is_none(), |j, r, r2, jf| {
                    if jf {
                        if r2 < ph.support2 && r2 > 0.0 {
                            ph.load_pair(r, r2, &pb, &particle(j), &mut f);
                        }
                    } else if let Some((bodies, dp, own)) = body {
                        let idj = info[j][0];
                        if r2 < dp * dp && r2 > 0.0 && !own.ids.contains(&idj) {
                            let [k, c] = pair_contact(own, bodies, idj);
                            let v = std::array::from_fn(|a| vel[i][a] - vel[j][a]);
                            let d = contact_force([r.x, r.y, r.z], r2, v, dp, k as f32, c as f32);
                            fc += V3::new(d[0], d[1], d[2]);
                        }
                    }
                });
                f += fc;
                let force = [f.x, f.y, f.z];
                (force != [0.0; 3]).then(|| ParticleLoad {
                    id: info[i][0],
                    pos: whole.absolute(cell[i], pos[i]),
                    force,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::CpuBackend;
    use surge_core::backend::{Backend, Part};
    use surge_core::buffers::Kind;
    use surge_core::gauge::Interpolate;
    use surge_core::geometry::fill;
    use surge_core::Case;

    /// Action is minus reaction: the loads on every boundary particle add up to minus the
    /// force the solids exert on the fluid in the force pass, `sum_f m_f (a_f - g)` (the
    /// fluid–fluid terms cancel in pairs), for water thrown at the walls (pressure and
    /// Monaghan viscosity) and for laminar viscosity with the mirrored wall velocity, with DBC
    /// and with mDBC walls (density and viscous velocity from the ghost nodes).
    /// Tolerance: 1e-5 of the water's weight (float32 sums of about 3000 terms; measured
    /// 2e-7).
    #[test]
    fn loads_are_minus_the_solids_force_on_the_fluid() {
        let text = r#"
            dp = 0.02
            time = { end = 1.0 }
            physics = { body_force = [0.0, -9.81] }
            initial_velocity = { kind = "constant", value = [1.0, -0.5] }
            fluid = [{ min = [0.0, 0.0], max = [0.6, 0.4] }]
            wall = [{ min = [0.0, 0.0], max = [1.0, 1.0], faces = ["x-", "x+", "y-"] }]
            obstacle = [{ min = [0.7, 0.0], max = [0.8, 0.2] }]
        "#;
        let visc = [r#"{kind="artificial", alpha=0.1}"#, r#"{kind="laminar", nu=1e-3}"#];
        let boundary = [r#"{kind="dbc"}"#, r#"{kind="mdbc"}"#];
        for (visc, boundary) in visc.iter().flat_map(|v| boundary.iter().map(move |b| (v, b))) {
            let sets = [format!("physics.viscosity={visc}"), format!("physics.boundary={boundary}")];
            let case = Case::from_str(text, &sets).unwrap_or_else(|e| panic!("{e}"));
            let filled = fill(&case);
            let mut be = CpuBackend::new(&case, &filled, 2).unwrap();
            be.forces(Part::Edges).unwrap();
            be.forces(Part::Inner).unwrap();
            let a = be.arrays();
            let g = case.body_force;
            let mut on_fluid = [0.0f64; 3];
            for i in (0..a.len()).filter(|&i| a.info[i][1] == Kind::Fluid as u32) {
                for k in 0..3 {
                    on_fluid[k] += a.pos[i][3] as f64 * (a.force[i][k] as f64 - g[k]);
                }
            }
            let mut loads = Vec::new();
            be.boundary_loads(&[filled.fluid_count() as u32..filled.len() as u32], &mut loads).unwrap();
            let mut on_solids = [0.0f64; 3];
            for l in &loads {
                for k in 0..3 {
                    on_solids[k] += l.force[k] as f64;
                }
            }
            let weight = filled.fluid_count() as f64 * case.mass * 9.81;
            let diff = (0..3).map(|k| (on_fluid[k] + on_solids[k]).abs()).fold(0.0, f64::max);
            println!(
                "{visc}: on the fluid {on_fluid:?}, on the solids {on_solids:?}: {:.1e} of the weight",
                diff / weight
            );
            assert!(on_solids.iter().any(|f| f.abs() > 0.1 * weight), "{visc}: the walls carry the water");
            assert!(diff < 1e-5 * weight, "{visc}: {on_fluid:?} on the fluid, {on_solids:?} on the solids");
        }
    }
}
