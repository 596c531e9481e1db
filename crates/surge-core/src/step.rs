//! The step plan: which stages a step runs, in which order, for each time scheme.

use crate::backend::{ForceStats, Update};
use crate::case::Case;
use crate::config::Scheme;
use crate::physics::dt::{dt_acoustic, dt_forces};

/// A stage of the step plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    /// Force pass.
    Forces,
    /// Reduce the time step over every device from the last force pass.
    ReduceDt,
    /// Integrate.
    Update(Update),
}

/// Stages of step number `step` (0-based).
pub fn plan(case: &Case, step: u64) -> &'static [Stage] {
    use Stage::*;
    match case.scheme {
        Scheme::Symplectic => {
            &[Forces, ReduceDt, Update(self::Update::Predictor), Forces, Update(self::Update::Corrector)]
        }
        Scheme::Verlet if (step + 1) % case.verlet_euler_every as u64 == 0 => {
            &[Forces, ReduceDt, Update(self::Update::VerletEuler)]
        }
        Scheme::Verlet => &[Forces, ReduceDt, Update(self::Update::Verlet)],
    }
}

/// The variable time step from the largest values of a force pass (already reduced over
/// devices): `cfl * min(sqrt(h/a_max), h/(c0 + visc_max))`, then the case's fixed limits.
/// A GPU alone takes it on the device: `dt_kernel` in kernels/step.cu is its float64 twin
/// (change both; `scripts/device_dt_check.sh` checks them bitwise equal), with [`land`].
pub fn time_step(case: &Case, s: &ForceStats) -> f64 {
    let dt = case.cfl * dt_forces(case.h, s.acc_max as f64).min(dt_acoustic(case.h, case.c0, s.visc_max as f64));
    case.limit_dt(dt)
}

/// The step `dt` landing on a limit `left` ahead: the whole of it where `dt` would leave less
/// than 1 % of it, so no sliver of a step follows (twin: `dt_kernel` in kernels/step.cu).
pub fn land(dt: f64, left: f64) -> f64 {
    if dt >= left * 0.99 {
        left
    } else {
        dt
    }
}

#[cfg(test)]
mod tests {
    use super::land;

    #[test]
    fn a_step_lands_on_its_limit_only_within_one_percent_of_it() {
        // Far from the limit (or none: a run's limit is infinite) the step is the step.
        assert_eq!(land(1e-4, f64::INFINITY), 1e-4);
        assert_eq!(land(0.5, 1.0), 0.5);
        // Past 99 % of what is left, or past it, the step takes exactly what is left.
        assert_eq!(land(0.99, 1.0), 1.0);
        assert_eq!(land(3.0, 1.0), 1.0);
        // Just short of 99 %: a step, then at least 1 % of the limit left.
        assert_eq!(land(0.989, 1.0), 0.989);
    }
}
