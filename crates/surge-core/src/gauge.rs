//! Gauge evaluation on top of what a backend can interpolate.

use crate::case::{Case, Gauge};

/// What a backend provides so gauges can be evaluated where the particles live.
pub trait Interpolate {
    /// Kernel sums over fluid particles j within the support of point x:
    /// `(sum W_j V_j, sum p_j W_j V_j)` with `V_j = m_j / rho_j`.
    fn fluid_sums(&self, x: [f64; 3]) -> (f64, f64);
    /// Largest coordinate along `axis` of fluid whose vertical coordinate is below `below`;
    /// `None` when no fluid qualifies.
    fn fluid_front(&self, axis: usize, below: f64) -> Option<f64>;
}

/// The fluid fraction above which a point counts as wet for `water_height`.
pub const WET_FRACTION: f64 = 0.5;

/// Evaluate every gauge of the case, in order, into `out`.
pub fn evaluate(case: &Case, src: &dyn Interpolate, out: &mut Vec<f64>) {
    out.clear();
    let vert = case.dim - 1;
    for g in &case.gauges {
        out.push(match g {
            Gauge::Pressure { point, .. } => {
                let (w, pw) = src.fluid_sums(*point);
                if w > 0.0 {
                    pw / w
                } else {
                    0.0
                }
            }
            Gauge::WaterHeight { at, .. } => {
                // Scan down from the top of the domain in steps of dp/2; the height is where the
                // fluid fraction first reaches WET_FRACTION, interpolated between samples.
                let (lo, hi) = (case.domain.min[vert], case.domain.max[vert]);
                let step = 0.5 * case.dp;
                let n = ((hi - lo) / step).ceil() as usize;
                let mut above: Option<(f64, f64)> = None;
                let mut height = lo;
                for k in 0..=n {
                    let z = hi - k as f64 * step;
                    let mut x = *at;
                    x[vert] = z;
                    let f = src.fluid_sums(x).0;
                    if f >= WET_FRACTION {
                        height = match above {
                            Some((za, fa)) => z + (za - z) * (f - WET_FRACTION) / (f - fa),
                            None => z,
                        };
                        break;
                    }
                    above = Some((z, f));
                }
                height
            }
            Gauge::Front { axis, below, .. } => src.fluid_front(*axis, *below).unwrap_or(case.domain.min[*axis]),
        });
    }
}
