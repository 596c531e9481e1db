//! Wave-maker theory and wave-record analysis for a piston or flap wave flume, as plain f64
//! functions.
//!
//! Generation: the linear dispersion relation ([`wave_number`]), the paddle transfer functions
//! of Biésel & Suquet (1951) in the form of Madsen (1971), Dean & Dalrymple (1991) and
//! Hughes (1993) ([`piston_ratio`], [`flap_ratio`]), a regular wave of first or second
//! order ([`RegularWave`], second order after Madsen 1971) and an irregular sea from a
//! JONSWAP spectrum ([`IrregularWave`], Goda 1988). Analysis: individual waves by zero
//! up-crossing ([`zero_upcrossing`]), the least-squares harmonic at one frequency
//! ([`harmonic`]) and incident/reflected separation from two gauges ([`reflection_two_gauge`],
//! Goda & Suzuki 1976).
//!
//! Conventions shared by every item: x points along the flume away from the paddle, in the
//! direction of the generated waves; a paddle displacement `X(t)` is measured at the
//! still-water level along x from the paddle's mean position; a wave component of angular
//! frequency ω, wave number k and phase φ has the elevation `a cos(ω t - k x + φ)`, in phase
//! at `x = 0` with the paddle velocity `(S/2) ω cos(ω t + φ)` of the displacement
//! `(S/2) sin(ω t + φ)` that makes it.
//!
//! References:
//! - Dean, R. G. & Dalrymple, R. A. (1991). Water Wave Mechanics for Engineers and Scientists.
//!   World Scientific.
//! - Fenton, J. D. & McKee, W. D. (1990). On calculating the lengths of water waves. Coastal
//!   Engineering 14, 499-513.
//! - Goda, Y. (1988). Statistical variability of sea state parameters as a function of wave
//!   spectrum. Coastal Engineering in Japan 31(1), 39-52 (the JONSWAP form of Goda 2000,
//!   Random Seas and Design of Maritime Structures).
//! - Goda, Y. & Suzuki, Y. (1976). Estimation of incident and reflected waves in random wave
//!   experiments. Proc. 15th ICCE, 828-845.
//! - Hughes, S. A. (1993). Physical Models and Laboratory Techniques in Coastal Engineering.
//!   World Scientific.
//! - Madsen, O. S. (1971). On the generation of long waves. J. Geophys. Res. 76(36),
//!   8672-8683 (the second-order piston motion as quoted by Altomare et al. 2017, Coastal
//!   Engineering 127, 37-54).

use std::f64::consts::PI;

fn check_positive(name: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be a positive finite number, got {v}"))
    }
}

fn check_non_negative(name: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be a finite number >= 0, got {v}"))
    }
}

/// Wave number k (rad/m) of the linear dispersion relation `ω² = g k tanh(k d)` (Dean &
/// Dalrymple 1991) for angular frequency `omega` (rad/s), water depth `depth` (m)
/// and gravity `g` (m/s²). Newton's method on `x tanh x = ω² d / g`, `x = k d`, from the
/// explicit approximation of Fenton & McKee (1990), `x ≈ y coth(y^(3/4))^(2/3)` with
/// `y = ω² d / g` (relative error below 1.5 %), until the step falls below 4 machine epsilons
/// of x: the result satisfies the relation to about 1e-15 relative. 0 for `omega = 0`; NaN
/// for a negative or non-finite `omega` or a depth or gravity that is not positive and
/// finite.
pub fn wave_number(omega: f64, depth: f64, g: f64) -> f64 {
    if !(omega.is_finite() && omega >= 0.0) || check_positive("", depth).is_err() || check_positive("", g).is_err() {
        return f64::NAN;
    }
    if omega == 0.0 {
        return 0.0;
    }
    let y = omega * omega * depth / g;
    let mut x = y / y.powf(0.75).tanh().powf(2.0 / 3.0);
    for _ in 0..50 {
        let th = x.tanh();
        // f(x) = x tanh x - y, f'(x) = tanh x + x sech² x.
        let step = (x * th - y) / (th + x * (1.0 - th * th));
        x -= step;
        if step.abs() <= 4.0 * f64::EPSILON * x {
            break;
        }
    }
    x / depth
}

/// Wave height over stroke `H/S` of a piston paddle at relative depth `kd` (Biésel & Suquet
/// 1951; Madsen 1971; Dean & Dalrymple 1991; Hughes 1993):
/// `H/S = 2 (cosh 2kd - 1) / (sinh 2kd + 2kd)`, evaluated as the equal
/// `2 tanh kd / (1 + 2kd / sinh 2kd)`, which neither overflows nor cancels. Tends to kd in
/// shallow water and to 2 in deep water; 0 at `kd = 0`.
pub fn piston_ratio(kd: f64) -> f64 {
    if kd == 0.0 {
        return 0.0;
    }
    2.0 * kd.tanh() / (1.0 + 2.0 * kd / (2.0 * kd).sinh())
}

/// Wave height over stroke `H/S` of a flap hinged at the bottom, S its stroke at the
/// still-water level, at relative depth `kd` (Dean & Dalrymple 1991; Hughes 1993):
/// `H/S = 4 (sinh kd / kd) (kd sinh kd - cosh kd + 1) / (sinh 2kd + 2kd)`,
/// evaluated as the equal `piston_ratio(kd) (1 - tanh(kd/2) / kd)`, which neither overflows
/// nor cancels. Tends to kd/2 in shallow water and to 2 (as `2 (1 - 1/kd)`) in deep water;
/// 0 at `kd = 0`.
pub fn flap_ratio(kd: f64) -> f64 {
    if kd == 0.0 {
        return 0.0;
    }
    piston_ratio(kd) * (1.0 - (0.5 * kd).tanh() / kd)
}

/// Half-cosine ramp `r(t) = (1 - cos(π t / ramp_time)) / 2` on `0 < t < ramp_time`, 0 before,
/// 1 after, with its time derivative: `(r, dr/dt)`. `ramp_time = 0` means no ramp: `(1, 0)`
/// at every t. r and dr/dt are continuous; dr/dt is 0 at both ends.
pub fn ramp(t: f64, ramp_time: f64) -> (f64, f64) {
    if ramp_time <= 0.0 {
        return (1.0, 0.0);
    }
    if t <= 0.0 {
        return (0.0, 0.0);
    }
    if t >= ramp_time {
        return (1.0, 0.0);
    }
    let (s, c) = (PI * t / ramp_time).sin_cos();
    (0.5 * (1.0 - c), 0.5 * PI / ramp_time * s)
}

/// The kind of wave paddle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paddle {
    /// A piston: the whole paddle moves horizontally, its displacement uniform over depth.
    Piston,
    /// A flap hinged at the bottom of the flume: the displacement grows linearly from 0 at
    /// the bed to X at the still-water level (rotation angle `atan(X / depth)`).
    Flap,
}

impl Paddle {
    /// Wave height over stroke at relative depth kd: [`piston_ratio`] or [`flap_ratio`].
    pub fn ratio(self, kd: f64) -> f64 {
        match self {
            Paddle::Piston => piston_ratio(kd),
            Paddle::Flap => flap_ratio(kd),
        }
    }
}

/// What defines a regular wave, for [`RegularWave::new`].
#[derive(Debug, Clone, PartialEq)]
pub struct RegularWaveSpec {
    /// Wave height H (m), crest to trough, of the first-order wave.
    pub height: f64,
    /// Period T (s).
    pub period: f64,
    /// Still-water depth d at the paddle (m).
    pub depth: f64,
    /// Gravity (m/s²).
    pub g: f64,
    /// Paddle kind.
    pub paddle: Paddle,
    /// Order of the paddle motion: 1 (linear) or 2 (Madsen 1971; piston only).
    pub order: u8,
    /// Duration of the half-cosine start-up ramp (s); 0 for none.
    pub ramp_time: f64,
    /// Phase φ (rad) of the displacement `sin(ω t + φ)`.
    pub phase: f64,
}

/// A regular wave made by a piston or flap paddle: the paddle's motion and the target
/// elevation. Built by [`RegularWave::new`] from a validated [`RegularWaveSpec`].
#[derive(Debug, Clone, PartialEq)]
pub struct RegularWave {
    spec: RegularWaveSpec,
    omega: f64,
    k: f64,
    stroke: f64,
    second: f64,
}

impl RegularWave {
    /// Validate `spec` and derive ω, k, the stroke and the second-order amplitude: height,
    /// period, depth and gravity positive and finite, order 1 or 2 (2 with a piston only),
    /// ramp time finite and not negative, phase finite.
    pub fn new(spec: RegularWaveSpec) -> Result<Self, String> {
        check_positive("wave height", spec.height)?;
        check_positive("wave period", spec.period)?;
        check_positive("water depth", spec.depth)?;
        check_positive("gravity", spec.g)?;
        check_non_negative("ramp time", spec.ramp_time)?;
        if !spec.phase.is_finite() {
            return Err(format!("wave phase must be finite, got {}", spec.phase));
        }
        match (spec.order, spec.paddle) {
            (1, _) | (2, Paddle::Piston) => {}
            (2, Paddle::Flap) => {
                return Err("second-order wave generation (Madsen 1971) is for a piston paddle only; \
                            use order 1 with a flap"
                    .into())
            }
            (o, _) => return Err(format!("wave order must be 1 or 2, got {o}")),
        }
        let omega = 2.0 * PI / spec.period;
        let k = wave_number(omega, spec.depth, spec.g);
        let kd = k * spec.depth;
        let m1 = spec.paddle.ratio(kd);
        let stroke = spec.height / m1;
        if !stroke.is_finite() {
            return Err(format!("the paddle stroke for kd = {kd} is not finite"));
        }
        let second = if spec.order == 2 { madsen_second_amplitude(spec.height, kd, spec.depth) } else { 0.0 };
        Ok(RegularWave { spec, omega, k, stroke, second })
    }

    /// The validated definition.
    pub fn spec(&self) -> &RegularWaveSpec {
        &self.spec
    }

    /// Angular frequency ω = 2π/T (rad/s).
    pub fn omega(&self) -> f64 {
        self.omega
    }

    /// Wave number k (rad/m), [`wave_number`].
    pub fn k(&self) -> f64 {
        self.k
    }

    /// Wavelength L = 2π/k (m).
    pub fn wavelength(&self) -> f64 {
        2.0 * PI / self.k
    }

    /// First-order stroke S = H / (H/S)(kd) (m), [`Paddle::ratio`]: the paddle's excursion
    /// at the still-water level, from one end to the other.
    pub fn stroke(&self) -> f64 {
        self.stroke
    }

    /// Amplitude of the second-order term of the displacement (m), 0 at order 1:
    /// [`madsen_second_amplitude`].
    pub fn second_amplitude(&self) -> f64 {
        self.second
    }

    fn signal(&self, t: f64) -> (f64, f64) {
        let th = self.omega * t + self.spec.phase;
        let (s1, c1) = th.sin_cos();
        let (s2, c2) = (2.0 * th).sin_cos();
        let half = 0.5 * self.stroke;
        (half * s1 + self.second * s2, self.omega * (half * c1 + 2.0 * self.second * c2))
    }

    /// Paddle displacement at the still-water level (m) at time t:
    /// `X(t) = r(t) [(S/2) sin(ω t + φ) + A2 sin(2 (ω t + φ))]`, r the [`ramp`] and A2
    /// [`Self::second_amplitude`] (Madsen 1971). 0 at t = 0 when φ = 0 or a ramp is set.
    pub fn displacement(&self, t: f64) -> f64 {
        let (r, _) = ramp(t, self.spec.ramp_time);
        r * self.signal(t).0
    }

    /// Paddle velocity (m/s) at time t, the exact derivative of [`Self::displacement`]:
    /// `r'(t) s(t) + r(t) s'(t)`, s the unramped signal.
    pub fn velocity(&self, t: f64) -> f64 {
        let (r, dr) = ramp(t, self.spec.ramp_time);
        let (s, ds) = self.signal(t);
        dr * s + r * ds
    }

    /// An upper bound of |[`Self::velocity`]| over all t:
    /// `(S/2 + |A2|) (ω + π / (2 ramp_time))` (the ramp term only with a ramp), from
    /// `|r' s| + |r s'| <= max|r'| max|s| + max|s'|` with `max|r'| = π / (2 ramp_time)`.
    pub fn max_speed(&self) -> f64 {
        let ramp_rate = if self.spec.ramp_time > 0.0 { 0.5 * PI / self.spec.ramp_time } else { 0.0 };
        (0.5 * self.stroke + self.second.abs()) * ramp_rate
            + self.omega * (0.5 * self.stroke + 2.0 * self.second.abs())
    }

    /// Target free-surface elevation (m) at distance x (m) from the paddle's mean position,
    /// without the ramp and without the paddle's evanescent modes (valid a few depths from
    /// the paddle): `(H/2) cos θ` with `θ = ω t - k x + φ` at order 1; at order 2 plus Stokes'
    /// bound second harmonic `(k H² / 16) cosh kd (2 + cosh 2kd) / sinh³ kd cos 2θ` (Stokes
    /// second-order theory, Dean & Dalrymple 1991).
    pub fn elevation(&self, x: f64, t: f64) -> f64 {
        let th = self.omega * t - self.k * x + self.spec.phase;
        let h = self.spec.height;
        let mut eta = 0.5 * h * th.cos();
        if self.spec.order == 2 {
            let kd = self.k * self.spec.depth;
            let a2 = self.k * h * h / 16.0 * kd.cosh() * (2.0 + (2.0 * kd).cosh()) / kd.sinh().powi(3);
            eta += a2 * (2.0 * th).cos();
        }
        eta
    }
}

/// Amplitude (m) of the second-harmonic term `A2 sin 2ωt` of a piston's displacement that
/// makes a second-order Stokes wave of height H in depth d without spurious free second
/// harmonics (Madsen 1971; Altomare et al. 2017):
/// `A2 = (H² / (32 d)) (3 cosh kd / sinh³ kd - 2 / m1)`, `m1 = piston_ratio(kd)` the
/// first-order H/S. Positive in shallow water, negative in deep water.
pub fn madsen_second_amplitude(height: f64, kd: f64, depth: f64) -> f64 {
    height * height / (32.0 * depth) * (3.0 * kd.cosh() / kd.sinh().powi(3) - 2.0 / piston_ratio(kd))
}

/// JONSWAP spectral density S(f) (m²/Hz) at frequency f (Hz) for significant wave height Hs
/// (m), peak period Tp (s) and peak enhancement γ, in the form of Goda (1988) (Goda 2000):
/// `S(f) = β Hs² Tp⁻⁴ f⁻⁵ exp(-1.25 (Tp f)⁻⁴) γ^exp(-(Tp f - 1)² / (2 σ²))`, with
/// `β = 0.0624 / (0.230 + 0.0336 γ - 0.185 / (1.9 + γ)) (1.094 - 0.01915 ln γ)` and
/// `σ = 0.07` for `f <= 1/Tp`, 0.09 above. Its zeroth moment is `Hs²/16` to within about
/// 1 % for `1 <= γ <= 7`. 0 for `f <= 0`.
pub fn jonswap(f: f64, hs: f64, tp: f64, gamma: f64) -> f64 {
    if f <= 0.0 {
        return 0.0;
    }
    let beta = 0.0624 / (0.230 + 0.0336 * gamma - 0.185 / (1.9 + gamma)) * (1.094 - 0.01915 * gamma.ln());
    let ftp = f * tp;
    let sigma = if ftp <= 1.0 { 0.07 } else { 0.09 };
    let peak = gamma.powf((-(ftp - 1.0).powi(2) / (2.0 * sigma * sigma)).exp());
    beta * hs * hs * tp.powi(-4) * f.powi(-5) * (-1.25 * ftp.powi(-4)).exp() * peak
}

/// SplitMix64 (Steele, Lea & Flood 2014; Vigna's reference `splitmix64.c`): a small,
/// deterministic 64-bit generator, here for the random phases of an irregular sea.
#[derive(Debug, Clone, PartialEq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform number in [0, 1) from the top 53 bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// What defines an irregular (JONSWAP) sea, for [`IrregularWave::new`]. Start from
/// [`IrregularWaveSpec::jonswap`] for the usual defaults.
#[derive(Debug, Clone, PartialEq)]
pub struct IrregularWaveSpec {
    /// Significant wave height Hs = 4 sqrt(m0) (m).
    pub hs: f64,
    /// Peak period Tp (s).
    pub tp: f64,
    /// Peak enhancement factor γ (>= 1; 1 is Pierson-Moskowitz, 3.3 the JONSWAP mean).
    pub gamma: f64,
    /// Still-water depth d at the paddle (m).
    pub depth: f64,
    /// Gravity (m/s²).
    pub g: f64,
    /// Paddle kind (first-order generation).
    pub paddle: Paddle,
    /// Number of components N.
    pub components: usize,
    /// Lowest frequency of the band, in units of the peak frequency fp = 1/Tp.
    pub f_min: f64,
    /// Highest frequency of the band, in units of fp.
    pub f_max: f64,
    /// Seed of the random phases: the same seed gives the same sea, bit for bit.
    pub seed: u64,
    /// Duration of the half-cosine start-up ramp (s); 0 for none (the paddle then starts
    /// away from its mean position, with random phases).
    pub ramp_time: f64,
}

impl IrregularWaveSpec {
    /// Hs, Tp, depth and gravity with the defaults: γ = 3.3, a piston, 200 components over
    /// 0.5 fp to 3 fp, seed 0 and a ramp of 2 Tp.
    pub fn jonswap(hs: f64, tp: f64, depth: f64, g: f64) -> Self {
        IrregularWaveSpec {
            hs,
            tp,
            gamma: 3.3,
            depth,
            g,
            paddle: Paddle::Piston,
            components: 200,
            f_min: 0.5,
            f_max: 3.0,
            seed: 0,
            ramp_time: 2.0 * tp,
        }
    }
}

/// One component of an irregular sea.
#[derive(Debug, Clone, PartialEq)]
pub struct Component {
    /// Frequency f (Hz).
    pub frequency: f64,
    /// Angular frequency ω = 2π f (rad/s).
    pub omega: f64,
    /// Wave number k (rad/m).
    pub k: f64,
    /// Wave amplitude a = sqrt(2 S(f) Δf) (m), S rescaled so that 4 sqrt(m0) = Hs.
    pub amplitude: f64,
    /// Paddle amplitude `a · 2 / (H/S)(kd)` (m): half this component's stroke.
    pub paddle_amplitude: f64,
    /// Random phase φ in [0, 2π) (rad).
    pub phase: f64,
}

/// An irregular sea made by a paddle at first order: a sum of components at equally spaced
/// frequencies with random phases. Built by [`IrregularWave::new`].
#[derive(Debug, Clone, PartialEq)]
pub struct IrregularWave {
    spec: IrregularWaveSpec,
    df: f64,
    components: Vec<Component>,
}

impl IrregularWave {
    /// Validate `spec` and build the components: N bands of width
    /// `Δf = (f_max - f_min) fp / N` with the components at the bands' centres
    /// `f_i = f_min fp + (i + 1/2) Δf`; amplitudes `a_i = sqrt(2 S(f_i) Δf)` from [`jonswap`],
    /// rescaled so that the discrete `m0 = Σ a_i² / 2` gives `4 sqrt(m0) = Hs` exactly;
    /// phases uniform in [0, 2π) from [`SplitMix64`] seeded with `seed`, one draw per
    /// component in order of frequency.
    pub fn new(spec: IrregularWaveSpec) -> Result<Self, String> {
        check_positive("significant wave height", spec.hs)?;
        check_positive("peak period", spec.tp)?;
        check_positive("water depth", spec.depth)?;
        check_positive("gravity", spec.g)?;
        check_non_negative("ramp time", spec.ramp_time)?;
        if !(spec.gamma.is_finite() && spec.gamma >= 1.0) {
            return Err(format!("JONSWAP gamma must be finite and >= 1, got {}", spec.gamma));
        }
        if spec.components == 0 {
            return Err("an irregular wave needs at least one component".into());
        }
        check_positive("lowest frequency (in units of fp)", spec.f_min)?;
        if !(spec.f_max.is_finite() && spec.f_max > spec.f_min) {
            return Err(format!(
                "highest frequency (in units of fp) must be finite and above the lowest ({}), got {}",
                spec.f_min, spec.f_max
            ));
        }
        let fp = 1.0 / spec.tp;
        let n = spec.components;
        let df = (spec.f_max - spec.f_min) * fp / n as f64;
        let freqs: Vec<f64> = (0..n).map(|i| spec.f_min * fp + (i as f64 + 0.5) * df).collect();
        let dens: Vec<f64> = freqs.iter().map(|&f| jonswap(f, spec.hs, spec.tp, spec.gamma)).collect();
        let m0: f64 = dens.iter().map(|s| s * df).sum();
        if !(m0.is_finite() && m0 > 0.0) {
            return Err(format!(
                "the JONSWAP spectrum carries no energy over {} fp to {} fp",
                spec.f_min, spec.f_max
            ));
        }
        let scale = spec.hs * spec.hs / 16.0 / m0;
        let mut rng = SplitMix64::new(spec.seed);
        let mut components = Vec::with_capacity(n);
        for (&frequency, &s) in freqs.iter().zip(&dens) {
            let omega = 2.0 * PI * frequency;
            let k = wave_number(omega, spec.depth, spec.g);
            let amplitude = (2.0 * s * scale * df).sqrt();
            let ratio = spec.paddle.ratio(k * spec.depth);
            let paddle_amplitude = 2.0 * amplitude / ratio;
            if !paddle_amplitude.is_finite() {
                return Err(format!("the paddle amplitude at f = {frequency} Hz is not finite"));
            }
            let phase = 2.0 * PI * rng.next_f64();
            components.push(Component { frequency, omega, k, amplitude, paddle_amplitude, phase });
        }
        Ok(IrregularWave { spec, df, components })
    }

    /// The validated definition.
    pub fn spec(&self) -> &IrregularWaveSpec {
        &self.spec
    }

    /// Frequency spacing Δf (Hz).
    pub fn df(&self) -> f64 {
        self.df
    }

    /// The components, in order of frequency.
    pub fn components(&self) -> &[Component] {
        &self.components
    }

    /// Significant wave height of the discrete spectrum, `4 sqrt(Σ a_i² / 2)` (m): Hs up to
    /// rounding.
    pub fn hs_discrete(&self) -> f64 {
        4.0 * (self.components.iter().map(|c| 0.5 * c.amplitude * c.amplitude).sum::<f64>()).sqrt()
    }

    fn signal(&self, t: f64) -> (f64, f64) {
        let (mut x, mut v) = (0.0, 0.0);
        for c in &self.components {
            let (s, co) = (c.omega * t + c.phase).sin_cos();
            x += c.paddle_amplitude * s;
            v += c.paddle_amplitude * c.omega * co;
        }
        (x, v)
    }

    /// Paddle displacement at the still-water level (m) at time t:
    /// `X(t) = r(t) Σ p_i sin(ω_i t + φ_i)`, p_i the paddle amplitudes, r the [`ramp`].
    pub fn displacement(&self, t: f64) -> f64 {
        let (r, _) = ramp(t, self.spec.ramp_time);
        r * self.signal(t).0
    }

    /// Paddle velocity (m/s) at time t, the exact derivative of [`Self::displacement`]:
    /// `r'(t) s(t) + r(t) s'(t)`.
    pub fn velocity(&self, t: f64) -> f64 {
        let (r, dr) = ramp(t, self.spec.ramp_time);
        let (s, ds) = self.signal(t);
        dr * s + r * ds
    }

    /// An upper bound of |[`Self::velocity`]| over all t: `Σ p_i (ω_i + π / (2 ramp_time))`
    /// (the ramp term only with a ramp).
    pub fn max_speed(&self) -> f64 {
        let ramp_rate = if self.spec.ramp_time > 0.0 { 0.5 * PI / self.spec.ramp_time } else { 0.0 };
        self.components.iter().map(|c| c.paddle_amplitude * (c.omega + ramp_rate)).sum()
    }

    /// Target linear free-surface elevation (m) at distance x (m) from the paddle's mean
    /// position, without the ramp and the evanescent modes: `Σ a_i cos(ω_i t - k_i x + φ_i)`.
    pub fn elevation(&self, x: f64, t: f64) -> f64 {
        self.components.iter().map(|c| c.amplitude * (c.omega * t - c.k * x + c.phase).cos()).sum()
    }
}

/// One individual wave of a record, between two successive zero up-crossings.
#[derive(Debug, Clone, PartialEq)]
pub struct Wave {
    /// Highest minus lowest sample between the two up-crossings (m).
    pub height: f64,
    /// Time between the two up-crossings (s).
    pub period: f64,
    /// Time of the first up-crossing (s).
    pub start: f64,
}

/// Time-weighted (trapezoidal) mean of a record; the plain mean when it spans no time.
fn record_mean(t: &[f64], eta: &[f64]) -> f64 {
    let n = t.len().min(eta.len());
    if n == 0 {
        return 0.0;
    }
    let span = t[n - 1] - t[0];
    if n == 1 || span == 0.0 {
        return eta[..n].iter().sum::<f64>() / n as f64;
    }
    let area: f64 = (0..n - 1).map(|i| 0.5 * (eta[i] + eta[i + 1]) * (t[i + 1] - t[i])).sum();
    area / span
}

/// Individual waves of the record `eta(t)` (t increasing, any spacing) by zero up-crossing
/// (Goda 2000): the record less its time-weighted (trapezoidal) mean crosses zero
/// upwards between samples i and i + 1 when `e_i < 0 <= e_{i+1}`, at the time interpolated
/// linearly between them; each pair of successive crossings makes one [`Wave`], its height
/// the highest minus the lowest sample between them (sample finely: a sampled sine's crest
/// is low by at most `a (1 - cos(π Δt / T))`). Only the first `min(t.len(), eta.len())`
/// samples are read; a record with fewer than two up-crossings has no wave.
pub fn zero_upcrossing(t: &[f64], eta: &[f64]) -> Vec<Wave> {
    let n = t.len().min(eta.len());
    if n < 2 {
        return Vec::new();
    }
    let mean = record_mean(&t[..n], &eta[..n]);
    let e: Vec<f64> = eta[..n].iter().map(|v| v - mean).collect();
    // (crossing time, index of the first sample after it)
    let mut ups = Vec::new();
    for i in 0..n - 1 {
        if e[i] < 0.0 && e[i + 1] >= 0.0 {
            let tc = t[i] + (t[i + 1] - t[i]) * (-e[i]) / (e[i + 1] - e[i]);
            ups.push((tc, i + 1));
        }
    }
    ups.windows(2)
        .map(|w| {
            let ((t0, i0), (t1, i1)) = (w[0], w[1]);
            let seg = &e[i0..i1];
            let crest = seg.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let trough = seg.iter().copied().fold(f64::INFINITY, f64::min);
            Wave { height: crest - trough, period: t1 - t0, start: t0 }
        })
        .collect()
}

/// Least-squares fit of `c0 + b cos 2πft + c sin 2πft` to the record `eta(t)` at frequency f
/// (Hz), any sampling, the record spanning whole periods or not: `(amplitude, phase)` with
/// `b cos 2πft + c sin 2πft = amplitude cos(2πft + phase)`, phase in (-π, π]. Exact (to
/// rounding) for a record that is an offset plus a sinusoid at f; other frequencies leak
/// into the fit unless the record is sampled uniformly over whole periods of f and of them.
/// Solves the 3 x 3 normal equations by Gaussian elimination with partial pivoting. Err
/// when t and eta differ in length, there are fewer than 3 samples, f is not positive and
/// finite, or the record is too short or too coarse to tell the three terms apart.
pub fn harmonic(t: &[f64], eta: &[f64], f: f64) -> Result<(f64, f64), String> {
    if t.len() != eta.len() {
        return Err(format!("record lengths differ: {} times, {} values", t.len(), eta.len()));
    }
    if t.len() < 3 {
        return Err(format!("a harmonic fit needs at least 3 samples, got {}", t.len()));
    }
    check_positive("harmonic frequency", f)?;
    let w = 2.0 * PI * f;
    let mut a = [[0.0f64; 4]; 3];
    for (&ti, &y) in t.iter().zip(eta) {
        let (s, c) = (w * ti).sin_cos();
        let row = [1.0, c, s];
        for i in 0..3 {
            for j in 0..3 {
                a[i][j] += row[i] * row[j];
            }
            a[i][3] += row[i] * y;
        }
    }
    let scale = t.len() as f64;
    for col in 0..3 {
        let piv = (col..3).max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs())).unwrap_or(col);
        a.swap(col, piv);
        if !(a[col][col].abs() > 1e-10 * scale) {
            return Err(format!(
                "the record cannot resolve a harmonic at f = {f} Hz (too short or too coarse a sampling)"
            ));
        }
        for row in col + 1..3 {
            let m = a[row][col] / a[col][col];
            for j in col..4 {
                a[row][j] -= m * a[col][j];
            }
        }
    }
    let mut x = [0.0f64; 3];
    for i in (0..3).rev() {
        let mut v = a[i][3];
        for j in i + 1..3 {
            v -= a[i][j] * x[j];
        }
        x[i] = v / a[i][i];
    }
    let (b, c) = (x[1], x[2]);
    Ok((b.hypot(c), (-c).atan2(b)))
}

/// Incident and reflected waves at one frequency from two gauges ([`reflection_two_gauge`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Reflection {
    /// Incident amplitude (m).
    pub incident: f64,
    /// Reflected amplitude (m).
    pub reflected: f64,
    /// Reflection coefficient, reflected over incident amplitude.
    pub coefficient: f64,
    /// Phase of the incident wave at gauge 1 (rad): `incident cos(2πft + incident_phase)`.
    pub incident_phase: f64,
    /// Phase of the reflected wave at gauge 1 (rad).
    pub reflected_phase: f64,
}

/// Two-gauge separation of incident and reflected waves at frequency f (Hz) (Goda & Suzuki
/// 1976), from the records `eta1`, `eta2` sampled at the same times t, gauge 2 at distance
/// `dx` (m) from gauge 1 in the direction of propagation, in water of depth `depth` with
/// gravity g. With the [`harmonic`] fits `Z_j = A_j e^(i φ_j)` (`η_j = Re(Z_j e^(iωt))`) and
/// the incident wave `Re(Z_I e^(i(ωt - kx)))`, the reflected `Re(Z_R e^(i(ωt + kx)))`, x from
/// gauge 1: `Z_I = (Z_1 e^(ikΔx) - Z_2) / (2i sin kΔx)`,
/// `Z_R = (Z_2 - Z_1 e^(-ikΔx)) / (2i sin kΔx)`. Singular when kΔx is a multiple of π
/// (gauges half a wavelength apart see the same amplitude from both waves): Err when
/// `|sin kΔx| < 0.1`; Goda & Suzuki recommend `0.05 L < Δx < 0.45 L`. Err also where
/// [`harmonic`] errs.
pub fn reflection_two_gauge(
    t: &[f64],
    eta1: &[f64],
    eta2: &[f64],
    dx: f64,
    f: f64,
    depth: f64,
    g: f64,
) -> Result<Reflection, String> {
    check_positive("frequency", f)?;
    check_positive("water depth", depth)?;
    check_positive("gravity", g)?;
    if !dx.is_finite() {
        return Err(format!("gauge spacing must be finite, got {dx}"));
    }
    let k = wave_number(2.0 * PI * f, depth, g);
    let (sn, cs) = (k * dx).sin_cos();
    if sn.abs() < 0.1 {
        return Err(format!(
            "two-gauge separation is singular: k dx = {:.4} rad is within 0.1 of a multiple of π \
             (|sin k dx| = {:.4}); space the gauges between 0.05 and 0.45 wavelengths ({:.4} m)",
            k * dx,
            sn.abs(),
            2.0 * PI / k
        ));
    }
    let (a1, p1) = harmonic(t, eta1, f)?;
    let (a2, p2) = harmonic(t, eta2, f)?;
    let z1 = (a1 * p1.cos(), a1 * p1.sin());
    let z2 = (a2 * p2.cos(), a2 * p2.sin());
    // Z1 e^(±ikΔx)
    let z1p = (z1.0 * cs - z1.1 * sn, z1.0 * sn + z1.1 * cs);
    let z1m = (z1.0 * cs + z1.1 * sn, -z1.0 * sn + z1.1 * cs);
    // Division by 2i sin: (u + iv) / (2i s) = (v - iu) / (2s).
    let div = |u: f64, v: f64| (v / (2.0 * sn), -u / (2.0 * sn));
    let zi = div(z1p.0 - z2.0, z1p.1 - z2.1);
    let zr = div(z2.0 - z1m.0, z2.1 - z1m.1);
    let incident = zi.0.hypot(zi.1);
    let reflected = zr.0.hypot(zr.1);
    Ok(Reflection {
        incident,
        reflected,
        coefficient: reflected / incident,
        incident_phase: zi.1.atan2(zi.0),
        reflected_phase: zr.1.atan2(zr.0),
    })
}
