//! Gauge evaluation on top of what a backend can interpolate.

use crate::case::{Case, Gauge};

/// What a backend provides so gauges can be evaluated where the particles live.
/// Points come in one batch so a device answers them in one launch.
pub trait Interpolate {
    /// Kernel sums over fluid particles j within the support of each point x:
    /// `(sum W_j V_j, sum p_j W_j V_j)` with `V_j = m_j / rho_j`, one pair per point.
    fn fluid_sums(&mut self, xs: &[[f64; 3]], out: &mut Vec<(f64, f64)>) -> Result<(), String>;
    /// Largest coordinate along `axis` of fluid whose vertical coordinate is below `below`;
    /// `None` when no fluid qualifies.
    fn fluid_front(&mut self, axis: usize, below: f64) -> Result<Option<f64>, String>;
}

/// Vertical samples of a water-height gauge: from the top of the domain down in dp/2 steps.
fn height_samples(case: &Case, at: [f64; 3]) -> impl Iterator<Item = [f64; 3]> + '_ {
    let vert = case.dim - 1;
    let (lo, hi) = (case.domain.min[vert], case.domain.max[vert]);
    let step = 0.5 * case.dp;
    let n = ((hi - lo) / step).ceil() as usize;
    (0..=n).map(move |k| {
        let mut x = at;
        x[vert] = hi - k as f64 * step;
        x
    })
}

/// The fluid fraction above which a point counts as wet for `water_height`.
pub const WET_FRACTION: f64 = 0.5;

/// Evaluate every gauge of the case, in order, into `out`.
pub fn evaluate(case: &Case, src: &mut dyn Interpolate, out: &mut Vec<f64>) -> Result<(), String> {
    let vert = case.dim - 1;
    let mut points = Vec::new();
    for g in &case.gauges {
        match g {
            Gauge::Pressure { point, .. } => points.push(*point),
            Gauge::WaterHeight { at, .. } => points.extend(height_samples(case, *at)),
            Gauge::Front { .. } => {}
        }
    }
    let mut sums = Vec::with_capacity(points.len());
    src.fluid_sums(&points, &mut sums)?;
    let mut next = 0;
    out.clear();
    for g in &case.gauges {
        out.push(match g {
            Gauge::Pressure { .. } => {
                let (w, pw) = sums[next];
                next += 1;
                if w > 0.0 {
                    pw / w
                } else {
                    0.0
                }
            }
            Gauge::WaterHeight { at, .. } => {
                // The height is where the fluid fraction first reaches WET_FRACTION coming
                // down, interpolated between samples; the domain bottom when nowhere wet.
                let mut above: Option<(f64, f64)> = None;
                let mut found = None;
                for x in height_samples(case, *at) {
                    let (z, f) = (x[vert], sums[next].0);
                    next += 1;
                    if found.is_none() && f >= WET_FRACTION {
                        found = Some(match above {
                            Some((za, fa)) => z + (za - z) * (f - WET_FRACTION) / (f - fa),
                            None => z,
                        });
                    }
                    above = Some((z, f));
                }
                found.unwrap_or(case.domain.min[vert])
            }
            Gauge::Front { axis, below, .. } => src.fluid_front(*axis, *below)?.unwrap_or(case.domain.min[*axis]),
        });
    }
    Ok(())
}
