//! Wave-maker theory and wave-record analysis for a piston or flap wave flume, as plain f64
//! functions.
//!
//! Generation: the linear dispersion relation ([`wave_number`]), the paddle transfer functions
//! of Biésel & Suquet (1951) in the form of Madsen (1971), Dean & Dalrymple (1991) and
//! Hughes (1993) ([`piston_ratio`], [`flap_ratio`]), a regular wave of first or second
//! order ([`RegularWave`], second order after Madsen 1971) and an irregular sea from a
//! JONSWAP spectrum ([`IrregularWave`], Goda 1988; DNV-RP-C205). Analysis: individual waves by zero
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
    (0.5 * (1.0 - c), ramp_rate(ramp_time) * s)
}

/// The largest rate of the start-up [`ramp`], `π / (2 ramp_time)` (0 without a ramp).
fn ramp_rate(ramp_time: f64) -> f64 {
    if ramp_time > 0.0 {
        0.5 * PI / ramp_time
    } else {
        0.0
    }
}

/// A signal `(s, s')` at time t under the start-up [`ramp`]: `(r s, r' s + r s')`, the
/// ramped value and its exact derivative.
fn ramped(t: f64, ramp_time: f64, (s, ds): (f64, f64)) -> (f64, f64) {
    let (r, dr) = ramp(t, ramp_time);
    (r * s, dr * s + r * ds)
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
        self.state(t).0
    }

    /// Paddle velocity (m/s) at time t, the exact derivative of [`Self::displacement`]:
    /// `r'(t) s(t) + r(t) s'(t)`, s the unramped signal.
    pub fn velocity(&self, t: f64) -> f64 {
        self.state(t).1
    }

    /// [`Self::displacement`] and [`Self::velocity`] together, the signal evaluated once.
    pub fn state(&self, t: f64) -> (f64, f64) {
        ramped(t, self.spec.ramp_time, self.signal(t))
    }

    /// An upper bound of |[`Self::velocity`]| over all t:
    /// `(S/2 + |A2|) (ω + π / (2 ramp_time))` (the ramp term only with a ramp), from
    /// `|r' s| + |r s'| <= max|r'| max|s| + max|s'|` with `max|r'| = π / (2 ramp_time)`.
    pub fn max_speed(&self) -> f64 {
        let ramp_rate = ramp_rate(self.spec.ramp_time);
        (0.5 * self.stroke + self.second.abs()) * ramp_rate + self.omega * (0.5 * self.stroke + 2.0 * self.second.abs())
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
/// = Hm0 = 4 sqrt(m0) (m), peak period Tp (s) and peak enhancement γ (Hasselmann et al.
/// 1973), normalised as in DNV-RP-C205 (2010, §3.5.5):
/// `S(f) = A_γ (5/16) Hs² Tp⁻⁴ f⁻⁵ exp(-1.25 (Tp f)⁻⁴) γ^exp(-(Tp f - 1)² / (2 σ²))`, with
/// `A_γ = 1 - 0.287 ln γ` and `σ = 0.07` for `f <= 1/Tp`, 0.09 above (the frequency form of
/// DNV's S(ω), `S(f) = 2π S(ω)`). Its zeroth moment is `Hs²/16` to within a few per cent for
/// `1 <= γ <= 7` (exactly at γ = 1, Pierson-Moskowitz). The shape is Goda's (1988) too; his
/// constant `β_J` normalises to the zero-crossing H_1/3 instead, larger by the factor
/// `1.094 - 0.01915 ln γ` (`Hm0 ≈ 1.05 H_1/3`). [`IrregularWave`] rescales its discrete
/// spectrum to `4 sqrt(m0) = Hs` exactly, so neither constant matters there. 0 for `f <= 0`.
pub fn jonswap(f: f64, hs: f64, tp: f64, gamma: f64) -> f64 {
    if f <= 0.0 {
        return 0.0;
    }
    let a_gamma = 1.0 - 0.287 * gamma.ln();
    let ftp = f * tp;
    let sigma = if ftp <= 1.0 { 0.07 } else { 0.09 };
    let peak = gamma.powf((-(ftp - 1.0).powi(2) / (2.0 * sigma * sigma)).exp());
    a_gamma * 5.0 / 16.0 * hs * hs * tp.powi(-4) * f.powi(-5) * (-1.25 * ftp.powi(-4)).exp() * peak
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
    /// Paddle amplitude `a / (H/S)(kd)` (m): half the stroke S = 2a / (H/S)(kd) that makes
    /// waves of this component's height 2a.
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
            return Err(format!("the JONSWAP spectrum carries no energy over {} fp to {} fp", spec.f_min, spec.f_max));
        }
        let scale = spec.hs * spec.hs / 16.0 / m0;
        let mut rng = SplitMix64::new(spec.seed);
        let mut components = Vec::with_capacity(n);
        for (&frequency, &s) in freqs.iter().zip(&dens) {
            let omega = 2.0 * PI * frequency;
            let k = wave_number(omega, spec.depth, spec.g);
            let amplitude = (2.0 * s * scale * df).sqrt();
            let ratio = spec.paddle.ratio(k * spec.depth);
            let paddle_amplitude = amplitude / ratio;
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
        self.state(t).0
    }

    /// Paddle velocity (m/s) at time t, the exact derivative of [`Self::displacement`]:
    /// `r'(t) s(t) + r(t) s'(t)`.
    pub fn velocity(&self, t: f64) -> f64 {
        self.state(t).1
    }

    /// [`Self::displacement`] and [`Self::velocity`] together, the signal evaluated once.
    pub fn state(&self, t: f64) -> (f64, f64) {
        ramped(t, self.spec.ramp_time, self.signal(t))
    }

    /// An upper bound of |[`Self::velocity`]| over all t: `Σ p_i (ω_i + π / (2 ramp_time))`
    /// (the ramp term only with a ramp).
    pub fn max_speed(&self) -> f64 {
        let ramp_rate = ramp_rate(self.spec.ramp_time);
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
        let p = a[col][col].abs();
        if p.is_nan() || p <= 1e-10 * scale {
            return Err(format!(
                "the record cannot resolve a harmonic at f = {f} Hz (too short or too coarse a sampling)"
            ));
        }
        let pivot = a[col];
        for row in a.iter_mut().skip(col + 1) {
            let m = row[col] / pivot[col];
            for (x, p) in row.iter_mut().zip(pivot).skip(col) {
                *x -= m * p;
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

#[cfg(test)]
mod tests {
    use super::*;

    const G: f64 = 9.81;

    /// `a - b` wrapped into (-π, π].
    fn angle_diff(a: f64, b: f64) -> f64 {
        let d = (a - b).rem_euclid(2.0 * PI);
        if d > PI {
            d - 2.0 * PI
        } else {
            d
        }
    }

    fn regular(height: f64, period: f64, depth: f64, paddle: Paddle, order: u8, ramp_time: f64) -> RegularWave {
        RegularWave::new(RegularWaveSpec { height, period, depth, g: G, paddle, order, ramp_time, phase: 0.0 })
            .expect("valid regular wave")
    }

    /// Uniform samples over `periods` whole periods of `period`, `per` samples each, the end
    /// point left out (so discrete sums of harmonics over the record vanish).
    fn whole_periods(period: f64, periods: usize, per: usize) -> Vec<f64> {
        let dt = period / per as f64;
        (0..periods * per).map(|i| i as f64 * dt).collect()
    }

    #[test]
    fn dispersion_deep_water_limit() {
        // kd of hundreds: tanh(kd) is 1 in f64, so L = g T² / 2π holds to rounding (1e-12).
        for (period, depth) in [(1.0, 200.0), (2.0, 100.0), (0.5, 50.0)] {
            let k = wave_number(2.0 * PI / period, depth, G);
            let l_deep = G * period * period / (2.0 * PI);
            assert!(
                (2.0 * PI / k / l_deep - 1.0).abs() < 1e-12,
                "T={period} d={depth}: L={} vs {l_deep}",
                2.0 * PI / k
            );
        }
    }

    #[test]
    fn dispersion_shallow_water_limit() {
        // c = sqrt(g d) sqrt(tanh(kd)/kd) = sqrt(g d) (1 - (kd)²/6 + ...): here kd = 2e-3, so
        // the relative difference is 7e-7; tolerance 1e-6, and it must be the series' term.
        let (period, depth) = (100.0, 0.01);
        let omega = 2.0 * PI / period;
        let k = wave_number(omega, depth, G);
        let c = omega / k;
        let kd = k * depth;
        let rel = c / (G * depth).sqrt() - 1.0;
        assert!(rel.abs() < 1e-6, "c/sqrt(gd) - 1 = {rel}");
        assert!((rel + kd * kd / 6.0).abs() < 1e-10, "rel={rel} vs -(kd)²/6={}", -kd * kd / 6.0);
    }

    #[test]
    fn dispersion_against_bisection_and_residual() {
        // d = 0.5 m, T = 1.2 s solved independently by bisection of x tanh x = ω² d / g to the
        // last bit; Newton's k agrees to 1e-12 relative (the requirement), the residual of
        // ω² = g k tanh(kd) to 1e-13 (a few roundings).
        let (depth, period) = (0.5, 1.2);
        let omega = 2.0 * PI / period;
        let y = omega * omega * depth / G;
        let (mut lo, mut hi) = (0.0f64, y + 1.0);
        for _ in 0..200 {
            let mid = 0.5 * (lo + hi);
            if mid * mid.tanh() < y {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        let k_ref = 0.5 * (lo + hi) / depth;
        let k = wave_number(omega, depth, G);
        assert!((k / k_ref - 1.0).abs() < 1e-12, "k={k} bisection={k_ref}");
        assert!((G * k * (k * depth).tanh() / (omega * omega) - 1.0).abs() < 1e-13);
        // L ≈ 2.05 m (L0 tanh kd, L0 = 2.248 m, kd ≈ 1.53): a sanity bound against a gross
        // error in the reference itself.
        assert!((2.0 * PI / k - 2.048).abs() < 0.005, "L={}", 2.0 * PI / k);
        // The residual holds from very shallow to very deep water (kd 1e-4 to 1e3).
        for i in 0..=70 {
            let kd_target = 10f64.powf(-4.0 + i as f64 * 0.1);
            let omega = (G * kd_target * kd_target.tanh() / depth).sqrt();
            let k = wave_number(omega, depth, G);
            let rel = G * k * (k * depth).tanh() / (omega * omega) - 1.0;
            assert!(rel.abs() < 1e-13, "kd={kd_target}: residual {rel}");
            assert!((k * depth / kd_target - 1.0).abs() < 1e-12, "kd={kd_target}: got {}", k * depth);
        }
        assert_eq!(wave_number(0.0, 1.0, G), 0.0);
        assert!(wave_number(1.0, -1.0, G).is_nan() && wave_number(f64::NAN, 1.0, G).is_nan());
    }

    fn piston_literal(x: f64) -> f64 {
        2.0 * ((2.0 * x).cosh() - 1.0) / ((2.0 * x).sinh() + 2.0 * x)
    }

    fn flap_literal(x: f64) -> f64 {
        4.0 * (x.sinh() / x) * (x * x.sinh() - x.cosh() + 1.0) / ((2.0 * x).sinh() + 2.0 * x)
    }

    #[test]
    fn transfer_functions_equal_the_literature_forms() {
        // The overflow-free forms equal the textbook ones where those are well conditioned
        // (kd 0.05 to 20): 1e-12 relative, a few roundings.
        for i in 0..400 {
            let x = 0.05 + i as f64 * 0.05;
            let (p, f) = (piston_ratio(x), flap_ratio(x));
            assert!((p / piston_literal(x) - 1.0).abs() < 1e-12, "piston kd={x}");
            assert!((f / flap_literal(x) - 1.0).abs() < 1e-12, "flap kd={x}");
            // Both grow with kd (the piston's reaches 2.0 in f64 by kd ≈ 19), and the flap
            // makes less wave than the piston.
            assert!(f < p && p <= piston_ratio(x + 0.05) && f < flap_ratio(x + 0.05), "kd={x}");
        }
        assert_eq!(Paddle::Piston.ratio(0.7), piston_ratio(0.7));
        assert_eq!(Paddle::Flap.ratio(0.7), flap_ratio(0.7));
    }

    #[test]
    fn transfer_function_limits() {
        // Shallow water (kd = 1e-3): piston H/S = kd (1 + O(kd⁴)), tolerance 1e-9; flap
        // H/S = (kd/2)(1 + kd²/12 + ...), tolerance 1e-6 (the correction is 8e-8).
        let x = 1e-3;
        assert!((piston_ratio(x) / x - 1.0).abs() < 1e-9, "{}", piston_ratio(x) / x);
        assert!((flap_ratio(x) / (0.5 * x) - 1.0).abs() < 1e-6, "{}", flap_ratio(x) / (0.5 * x));
        assert!((piston_literal(0.01) / 0.01 - 1.0).abs() < 1e-6);
        assert!((flap_literal(0.01) / 0.005 - 1.0).abs() < 1e-4);
        // Deep water: piston -> 2 (tanh 50 = 1 in f64), flap -> 2 as 2 (1 - 1/kd) up to
        // e^(-kd) terms; the textbook forms agree at kd = 50 to 1e-12 relative.
        let x = 50.0;
        assert!((piston_ratio(x) - 2.0).abs() < 1e-14 && (piston_literal(x) - 2.0).abs() < 1e-12);
        assert!((flap_ratio(x) - 2.0 * (1.0 - 1.0 / x)).abs() < 1e-12);
        assert!((flap_literal(x) / (2.0 * (1.0 - 1.0 / x)) - 1.0).abs() < 1e-12);
        // Beyond sinh's overflow (kd = 1000) the forms used stay finite.
        assert_eq!(piston_ratio(1000.0), 2.0);
        assert!((flap_ratio(1000.0) - 2.0 * (1.0 - 1e-3)).abs() < 1e-12);
        assert_eq!((piston_ratio(0.0), flap_ratio(0.0)), (0.0, 0.0));
    }

    #[test]
    fn ramp_shape() {
        assert_eq!(ramp(-1.0, 2.0), (0.0, 0.0));
        assert_eq!(ramp(0.0, 2.0), (0.0, 0.0));
        assert_eq!(ramp(2.0, 2.0), (1.0, 0.0));
        assert_eq!(ramp(5.0, 0.0), (1.0, 0.0));
        let (r, dr) = ramp(1.0, 2.0);
        // Half way: r = 1/2 and the steepest slope π / (2 T_r), to rounding.
        assert!((r - 0.5).abs() < 1e-15 && (dr - PI / 4.0).abs() < 1e-15);
    }

    /// Central differences of `x` against `v` over `ts`: the largest error relative to
    /// `scale`.
    fn derivative_error(
        x: impl Fn(f64) -> f64,
        v: impl Fn(f64) -> f64,
        ts: impl Iterator<Item = f64>,
        scale: f64,
    ) -> f64 {
        let h = 1e-5;
        ts.map(|t| ((x(t + h) - x(t - h)) / (2.0 * h) - v(t)).abs() / scale).fold(0.0, f64::max)
    }

    #[test]
    fn regular_velocity_is_the_derivative_of_displacement() {
        // h = 1e-5 s: truncation (h ω)² / 6 ~ 1e-10 and rounding ε / (h ω) ~ 1e-11 of the
        // speed scale, so 1e-6 relative to max_speed leaves a wide margin yet catches a
        // missing ramp-derivative term (of order π/(2 T_r) / ω ~ 0.1).
        for (paddle, order, phase) in [(Paddle::Piston, 1, 0.0), (Paddle::Piston, 2, 0.3), (Paddle::Flap, 1, -1.1)] {
            let w = RegularWave::new(RegularWaveSpec {
                height: 0.06,
                period: 1.3,
                depth: 0.45,
                g: G,
                paddle,
                order,
                ramp_time: 2.6,
                phase,
            })
            .expect("valid");
            // Through the ramp (0 to 2.6 s) and after it, off the ramp's ends.
            let ts = (0..800).map(|i| 0.00731 + i as f64 * 0.00997);
            let err = derivative_error(|t| w.displacement(t), |t| w.velocity(t), ts, w.max_speed());
            assert!(err < 1e-6, "{paddle:?} order {order}: {err}");
            assert_eq!(w.displacement(0.0), 0.0);
            assert_eq!(w.velocity(0.0), 0.0);
        }
        // Without a ramp and phase 0 the displacement starts at 0 and the velocity at its
        // amplitude (S/2) ω (first order).
        let w = regular(0.05, 1.2, 0.5, Paddle::Piston, 1, 0.0);
        assert_eq!(w.displacement(0.0), 0.0);
        assert!((w.velocity(0.0) / (0.5 * w.stroke() * w.omega()) - 1.0).abs() < 1e-15);
    }

    #[test]
    fn regular_max_speed_bounds_velocity() {
        // The bound holds at every sample, and is not loose by more than the ramp's share
        // (π / (2 T_r ω) = 1/8 here) plus the second order's.
        for (paddle, order) in [(Paddle::Piston, 2), (Paddle::Flap, 1)] {
            let w = regular(0.05, 1.5, 0.4, paddle, order, 3.0);
            let peak = (0..20000).map(|i| w.velocity(i as f64 * 0.0005).abs()).fold(0.0, f64::max);
            assert!(peak <= w.max_speed(), "{paddle:?}: {peak} > {}", w.max_speed());
            assert!(peak > 0.85 * w.max_speed(), "{paddle:?}: {peak} vs {}", w.max_speed());
        }
    }

    #[test]
    fn regular_stroke_from_transfer_function() {
        let w = regular(0.05, 1.2, 0.5, Paddle::Flap, 1, 0.0);
        let kd = w.k() * 0.5;
        assert!((w.stroke() - 0.05 / flap_literal(kd)).abs() < 1e-15);
        assert!((w.wavelength() - 2.0 * PI / w.k()).abs() < 1e-15);
        assert_eq!(w.second_amplitude(), 0.0);
    }

    #[test]
    fn second_order_madsen_term() {
        // d = 0.4 m, H = 0.05 m, T = 1.5 s (kd ≈ 0.96): A2 evaluated here from the textbook
        // m1 and Madsen's bracket; the module's value agrees to 1e-12 relative (rounding).
        // The bracket 3 cosh kd / sinh³ kd - 2/m1 ≈ 3.24 - 2.12 is positive: A2 ≈ 2.2e-4 m,
        // in phase with the first harmonic's sin 2ωt.
        let (h, t, d) = (0.05, 1.5, 0.4);
        let w = regular(h, t, d, Paddle::Piston, 2, 0.0);
        let kd = wave_number(2.0 * PI / t, d, G) * d;
        let m1 = piston_literal(kd);
        let a2 = h * h / (32.0 * d) * (3.0 * kd.cosh() / kd.sinh().powi(3) - 2.0 / m1);
        assert!((w.second_amplitude() / a2 - 1.0).abs() < 1e-12, "{} vs {a2}", w.second_amplitude());
        assert!(a2 > 1.5e-4 && a2 < 3.0e-4, "A2 = {a2}");
        assert!((w.stroke() - h / m1).abs() < 1e-15);
        // The displacement record holds (S/2) sin ωt + A2 sin 2ωt: least-squares fits over
        // whole periods, uniformly sampled, find both (amplitude, phase -π/2) to 1e-12.
        let ts = whole_periods(t, 4, 360);
        let xs: Vec<f64> = ts.iter().map(|&s| w.displacement(s)).collect();
        let (a, p) = harmonic(&ts, &xs, 1.0 / t).expect("fit");
        assert!((a - 0.5 * w.stroke()).abs() < 1e-12 && angle_diff(p, -0.5 * PI).abs() < 1e-10, "{a} {p}");
        let (a, p) = harmonic(&ts, &xs, 2.0 / t).expect("fit");
        assert!((a - a2).abs() < 1e-12 && angle_diff(p, -0.5 * PI).abs() < 1e-8, "{a} {p}");
        // Deep water: the bracket turns negative (3 cosh / sinh³ -> 0, 2/m1 -> 1).
        assert!(madsen_second_amplitude(0.05, 3.0, 1.0) < 0.0);
    }

    #[test]
    fn elevation_phase_convention() {
        // The elevation travels towards +x at c = ω/k, and at x = 0 is in phase with the
        // paddle velocity (first order, no ramp): both to rounding (1e-12 of the amplitude).
        let w = regular(0.05, 1.2, 0.5, Paddle::Piston, 1, 0.0);
        let c = w.omega() / w.k();
        for i in 0..50 {
            let (x, t, dt) = (0.3 * i as f64, 0.17 * i as f64, 0.05 + 0.01 * i as f64);
            assert!((w.elevation(x + c * dt, t + dt) - w.elevation(x, t)).abs() < 1e-12);
            let v = w.velocity(t) / (0.5 * w.stroke() * w.omega());
            assert!((w.elevation(0.0, t) / 0.025 - v).abs() < 1e-12);
        }
        // Order 2 adds Stokes' bound harmonic: crests higher and troughs shallower than H/2.
        let w2 = regular(0.05, 1.5, 0.4, Paddle::Piston, 2, 0.0);
        let crest = w2.elevation(0.0, 0.0);
        let trough = w2.elevation(0.0, 0.75);
        assert!(crest > 0.025 && trough > -0.025 && (crest - trough - 0.05).abs() < 1e-12);
    }

    #[test]
    fn regular_wave_refuses_bad_input() {
        let ok = RegularWaveSpec {
            height: 0.05,
            period: 1.2,
            depth: 0.5,
            g: G,
            paddle: Paddle::Piston,
            order: 1,
            ramp_time: 1.0,
            phase: 0.0,
        };
        assert!(RegularWave::new(ok.clone()).is_ok());
        let err = |spec: RegularWaveSpec| RegularWave::new(spec).expect_err("must be refused");
        assert!(err(RegularWaveSpec { paddle: Paddle::Flap, order: 2, ..ok.clone() }).contains("piston"));
        assert!(err(RegularWaveSpec { order: 3, ..ok.clone() }).contains("order"));
        assert!(err(RegularWaveSpec { order: 0, ..ok.clone() }).contains("order"));
        assert!(err(RegularWaveSpec { height: -0.1, ..ok.clone() }).contains("height"));
        assert!(err(RegularWaveSpec { period: f64::NAN, ..ok.clone() }).contains("period"));
        assert!(err(RegularWaveSpec { depth: 0.0, ..ok.clone() }).contains("depth"));
        assert!(err(RegularWaveSpec { ramp_time: -1.0, ..ok.clone() }).contains("ramp"));
        assert!(err(RegularWaveSpec { phase: f64::INFINITY, ..ok }).contains("phase"));
    }

    #[test]
    fn splitmix64_reference_values() {
        // The first outputs of Vigna's splitmix64.c from seed 1234567.
        let mut r = SplitMix64::new(1234567);
        let want = [6457827717110365317u64, 3203168211198807973, 9817491932198370423, 4593380528125082431];
        for w in want {
            assert_eq!(r.next_u64(), w);
        }
        let mut r = SplitMix64::new(7);
        assert!((0..1000).map(|_| r.next_f64()).all(|u| (0.0..1.0).contains(&u)));
    }

    fn sea(seed: u64) -> IrregularWave {
        IrregularWave::new(IrregularWaveSpec { components: 256, seed, ..IrregularWaveSpec::jonswap(0.1, 1.5, 0.6, G) })
            .expect("valid sea")
    }

    #[test]
    fn jonswap_hs_and_peak() {
        // The rescaled discrete spectrum gives 4 sqrt(m0) = Hs to rounding (1e-9 asked; a
        // sum of 256 terms errs by ~1e-15).
        for gamma in [1.0, 3.3, 7.0] {
            let w = IrregularWave::new(IrregularWaveSpec { gamma, ..IrregularWaveSpec::jonswap(0.1, 1.5, 0.6, G) })
                .expect("valid");
            assert!((w.hs_discrete() / 0.1 - 1.0).abs() < 1e-9, "gamma={gamma}: {}", w.hs_discrete());
            // The largest component lies within one Δf of fp = 1/Tp.
            let top = w.components().iter().max_by(|a, b| a.amplitude.total_cmp(&b.amplitude)).expect("has components");
            assert!((top.frequency - 1.0 / 1.5).abs() <= w.df(), "gamma={gamma}: peak at {}", top.frequency);
            // Δf and the band: N centres over [0.5 fp, 3 fp].
            let c = w.components();
            assert!((w.df() - 2.5 / 1.5 / 200.0).abs() < 1e-15);
            assert!((c[0].frequency - (0.5 / 1.5 + 0.5 * w.df())).abs() < 1e-15);
            assert!((c[199].frequency - (3.0 / 1.5 - 0.5 * w.df())).abs() < 1e-12);
            // Paddle amplitude = half the stroke of the regular wave of height 2a and the
            // component's period (so that each component is the regular wave it stands for).
            for c in c {
                assert!((c.paddle_amplitude - c.amplitude / piston_literal(c.k * 0.6)).abs() < 1e-15);
                let regular = RegularWave::new(RegularWaveSpec {
                    height: 2.0 * c.amplitude,
                    period: 1.0 / c.frequency,
                    depth: 0.6,
                    g: 9.81,
                    paddle: Paddle::Piston,
                    order: 1,
                    ramp_time: 0.0,
                    phase: 0.0,
                })
                .unwrap();
                assert!((c.paddle_amplitude - 0.5 * regular.stroke()).abs() < 1e-12 * regular.stroke(), "{c:?}");
            }
        }
        // DNV's A_γ normalises the continuous spectrum to Hs²/16: exactly at γ = 1 (to the
        // quadrature's 1e-4 and the tails' < 1e-3 beyond 0.2 fp to 10 fp), within 2 % up to
        // γ = 7 (DNV: "reasonable" for 1 <= γ <= 7).
        for (gamma, tol) in [(1.0, 1e-3), (3.3, 0.02), (7.0, 0.02)] {
            let (hs, tp) = (2.0, 8.0);
            let n = 20000;
            let df = (10.0 - 0.2) / tp / n as f64;
            let m0: f64 = (0..n).map(|i| jonswap(0.2 / tp + (i as f64 + 0.5) * df, hs, tp, gamma) * df).sum();
            assert!((4.0 * m0.sqrt() / hs - 1.0).abs() < tol, "gamma={gamma}: Hm0/Hs = {}", 4.0 * m0.sqrt() / hs);
        }
    }

    #[test]
    fn same_seed_same_sea() {
        let (a, b, c) = (sea(42), sea(42), sea(43));
        assert_eq!(a, b);
        let ts: Vec<f64> = (0..500).map(|i| 0.037 * i as f64).collect();
        assert!(ts.iter().all(|&t| a.displacement(t).to_bits() == b.displacement(t).to_bits()));
        assert!(ts.iter().all(|&t| a.velocity(t).to_bits() == b.velocity(t).to_bits()));
        // Another seed gives other phases, and a visibly different motion.
        assert!(ts.iter().any(|&t| (a.displacement(t) - c.displacement(t)).abs() > 1e-4));
        assert!(a.components().iter().zip(c.components()).all(|(x, y)| x.phase != y.phase));
    }

    #[test]
    fn irregular_velocity_is_the_derivative_of_displacement() {
        // As for the regular wave (1e-6 of max_speed; see there), through the ramp (3 s) and
        // after it; the velocity never exceeds max_speed.
        for paddle in [Paddle::Piston, Paddle::Flap] {
            let w = IrregularWave::new(IrregularWaveSpec {
                paddle,
                components: 64,
                seed: 9,
                ..IrregularWaveSpec::jonswap(0.08, 1.5, 0.5, G)
            })
            .expect("valid");
            let ts = (0..1000).map(|i| 0.00731 + i as f64 * 0.00997);
            let err = derivative_error(|t| w.displacement(t), |t| w.velocity(t), ts, w.max_speed());
            assert!(err < 1e-6, "{paddle:?}: {err}");
            assert_eq!(w.displacement(0.0), 0.0);
            let peak = (0..40000).map(|i| w.velocity(i as f64 * 0.001).abs()).fold(0.0, f64::max);
            assert!(peak > 0.0 && peak <= w.max_speed(), "{paddle:?}: {peak} vs {}", w.max_speed());
        }
    }

    #[test]
    fn irregular_wave_refuses_bad_input() {
        let ok = IrregularWaveSpec::jonswap(0.1, 1.5, 0.6, G);
        let err = |spec: IrregularWaveSpec| IrregularWave::new(spec).expect_err("must be refused");
        assert!(err(IrregularWaveSpec { components: 0, ..ok.clone() }).contains("component"));
        assert!(err(IrregularWaveSpec { gamma: 0.5, ..ok.clone() }).contains("gamma"));
        assert!(err(IrregularWaveSpec { f_max: 0.4, ..ok.clone() }).contains("highest"));
        assert!(err(IrregularWaveSpec { f_min: 0.0, ..ok.clone() }).contains("lowest"));
        assert!(err(IrregularWaveSpec { hs: 0.0, ..ok.clone() }).contains("significant"));
        // A band far below the peak carries no energy in f64.
        assert!(err(IrregularWaveSpec { f_min: 1e-3, f_max: 2e-3, ..ok }).contains("no energy"));
    }

    #[test]
    fn zero_upcrossing_on_a_sine() {
        // η = c + a sin ωt sampled at Δt = T/402, so crests and troughs fall on samples and
        // up-crossings halfway between two (where the linear interpolation is exact by
        // symmetry); over 6 whole periods the trapezoidal mean is c. Height 2a and period T
        // to 1e-6 (asked; rounding gives ~1e-15), 5 whole waves starting at 0, T, ...
        let (a, period, c) = (0.037, 1.7, 0.21);
        let dt = period / 402.0;
        let ts: Vec<f64> = (0..=6 * 402).map(|j| (j as f64 - 0.5) * dt).collect();
        let eta: Vec<f64> = ts.iter().map(|&t| c + a * (2.0 * PI * t / period).sin()).collect();
        let waves = zero_upcrossing(&ts, &eta);
        assert_eq!(waves.len(), 5);
        for (i, w) in waves.iter().enumerate() {
            assert!((w.height - 2.0 * a).abs() < 1e-6, "wave {i}: H={}", w.height);
            assert!((w.period - period).abs() < 1e-6, "wave {i}: T={}", w.period);
            assert!((w.start - i as f64 * period).abs() < 1e-6, "wave {i}: start={}", w.start);
        }
        assert!(zero_upcrossing(&ts[..3], &eta[..3]).is_empty());
        assert!(zero_upcrossing(&[], &[]).is_empty());
    }

    #[test]
    fn harmonic_with_second_harmonic_and_offset() {
        // c0 + a1 cos(ωt + φ1) + a2 cos(2ωt + φ2), uniformly over whole periods: the second
        // harmonic is orthogonal to the fitted terms, so each fit is exact to rounding (1e-9).
        let (period, c0, a1, p1, a2, p2) = (1.3, 0.4, 0.05, 2.2, 0.008, -0.9);
        let w = 2.0 * PI / period;
        let ts = whole_periods(period, 5, 100);
        let eta: Vec<f64> = ts.iter().map(|&t| c0 + a1 * (w * t + p1).cos() + a2 * (2.0 * w * t + p2).cos()).collect();
        let (a, p) = harmonic(&ts, &eta, 1.0 / period).expect("fit");
        assert!((a - a1).abs() < 1e-9 && angle_diff(p, p1).abs() < 1e-9, "{a} {p}");
        let (a, p) = harmonic(&ts, &eta, 2.0 / period).expect("fit");
        assert!((a - a2).abs() < 1e-9 && angle_diff(p, p2).abs() < 1e-9, "{a} {p}");
    }

    #[test]
    fn harmonic_non_uniform_partial_record() {
        // An offset plus one sinusoid lies in the fitted model: recovered exactly (1e-9)
        // from jittered sampling over 3.37 periods starting at t = 11.3 s.
        let (period, c0, a1, p1) = (0.9, -0.02, 0.03, -2.7);
        let w = 2.0 * PI / period;
        let mut rng = SplitMix64::new(5);
        let mut t = 11.3;
        let mut ts = Vec::new();
        while t < 11.3 + 3.37 * period {
            ts.push(t);
            t += 0.01 * (0.2 + 1.6 * rng.next_f64());
        }
        let eta: Vec<f64> = ts.iter().map(|&t| c0 + a1 * (w * t + p1).cos()).collect();
        let (a, p) = harmonic(&ts, &eta, 1.0 / period).expect("fit");
        assert!((a - a1).abs() < 1e-9 && angle_diff(p, p1).abs() < 1e-9, "{a} {p}");
        // Refusals: lengths differ, too few samples, no time spanned.
        assert!(harmonic(&ts, &eta[1..], 1.0).is_err());
        assert!(harmonic(&ts[..2], &eta[..2], 1.0).is_err());
        assert!(harmonic(&[1.0; 10], &[0.5; 10], 1.0).is_err());
        assert!(harmonic(&ts, &eta, 0.0).is_err());
    }

    /// Gauge records of an incident wave `ai cos(ωt - kx + pi)` and a reflected one
    /// `ar cos(ωt + kx + pr)` at x = 0 and x = dx.
    fn two_gauge_records(dx: f64, period: f64, depth: f64, waves: [f64; 4]) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
        let [ai, pi, ar, pr] = waves;
        let w = 2.0 * PI / period;
        let k = wave_number(w, depth, G);
        let ts = whole_periods(period, 8, 64);
        let at = |x: f64| -> Vec<f64> {
            ts.iter().map(|&t| ai * (w * t - k * x + pi).cos() + ar * (w * t + k * x + pr).cos()).collect()
        };
        let (e1, e2) = (at(0.0), at(dx));
        (ts, e1, e2)
    }

    #[test]
    fn two_gauge_reflection_recovers_the_pair() {
        // Incident 0.05 m, reflected 0.01 m, arbitrary phases, gauges 0.23 L apart: the
        // separation is exact algebra on exact fits, so 1e-9.
        let (period, depth) = (1.2, 0.5);
        let l = 2.0 * PI / wave_number(2.0 * PI / period, depth, G);
        for (dx, p_i, p_r) in [(0.23 * l, 0.7, -2.1), (0.41 * l, -3.0, 1.2), (0.07 * l, 2.5, 0.1)] {
            let (ts, e1, e2) = two_gauge_records(dx, period, depth, [0.05, p_i, 0.01, p_r]);
            let r = reflection_two_gauge(&ts, &e1, &e2, dx, 1.0 / period, depth, G).expect("separable");
            assert!((r.incident - 0.05).abs() < 1e-9, "{r:?}");
            assert!((r.reflected - 0.01).abs() < 1e-9, "{r:?}");
            assert!((r.coefficient - 0.2).abs() < 1e-9, "{r:?}");
            assert!(angle_diff(r.incident_phase, p_i).abs() < 1e-9, "{r:?}");
            assert!(angle_diff(r.reflected_phase, p_r).abs() < 1e-9, "{r:?}");
        }
    }

    #[test]
    fn two_gauge_reflection_is_refused_near_k_dx_multiple_of_pi() {
        // |sin k dx| < 0.1: half a wavelength (k dx = π), 0.49 L (|sin| = 0.063), a whole
        // wavelength and no spacing at all are refused; 0.45 L (|sin| = 0.31) is not.
        let (period, depth) = (1.2, 0.5);
        let l = 2.0 * PI / wave_number(2.0 * PI / period, depth, G);
        for dx in [0.5 * l, 0.49 * l, 0.51 * l, l, 0.0] {
            let (ts, e1, e2) = two_gauge_records(dx, period, depth, [0.05, 0.3, 0.01, 1.0]);
            let e = reflection_two_gauge(&ts, &e1, &e2, dx, 1.0 / period, depth, G).expect_err("singular");
            assert!(e.contains("singular"), "{e}");
        }
        let (ts, e1, e2) = two_gauge_records(0.45 * l, period, depth, [0.05, 0.3, 0.01, 1.0]);
        assert!(reflection_two_gauge(&ts, &e1, &e2, 0.45 * l, 1.0 / period, depth, G).is_ok());
    }
}
