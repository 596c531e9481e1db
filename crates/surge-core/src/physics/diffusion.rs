//! Density diffusion (delta-SPH) terms of the continuity equation, per fluid pair, as a
//! rate of the physical density. `r = x_i - x_j`, `gw = grad_i W_ij`, `vol_j = m_j / rho_j`.

use crate::V3;

/// Molteni & Colagrossi (2009): `delta h c0 2 (rho_j - rho_i) (x_j - x_i).gw / r² vol_j`.
#[inline(always)]
pub fn molteni_colagrossi(
    delta_h_c0: f32,
    rho_i: f32,
    rho_j: f32,
    r: V3,
    r2: f32,
    eta2: f32,
    gw: V3,
    vol_j: f32,
) -> f32 {
    delta_h_c0 * 2.0 * (rho_j - rho_i) * (-r).dot(gw) / (r2 + eta2) * vol_j
}

/// Fourtakas et al. (2019): as Molteni–Colagrossi with the hydrostatic density difference
/// removed, `rho_ji^H = rho0 ((1 + rho0 g.(x_j - x_i) / B)^(1/gamma) - 1)`.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn fourtakas(
    delta_h_c0: f32,
    rho_i: f32,
    rho_j: f32,
    r: V3,
    r2: f32,
    eta2: f32,
    gw: V3,
    vol_j: f32,
    rho0: f32,
    g: V3,
    inv_b: f32,
    inv_gamma: f32,
) -> f32 {
    let arg = 1.0 + rho0 * g.dot(-r) * inv_b;
    let rho_h = rho0 * (pow_pos(arg.max(0.0), inv_gamma) - 1.0);
    delta_h_c0 * 2.0 * ((rho_j - rho_i) - rho_h) * (-r).dot(gw) / (r2 + eta2) * vol_j
}

/// `2 / (2k + 1)` for k = 1..4: the series `ln m = 2 atanh(t) = 2 (t + t³/3 + t⁵/5 + ...)`.
pub const POW_LN: [f32; 4] = [2.0 / 3.0, 2.0 / 5.0, 2.0 / 7.0, 2.0 / 9.0];
/// `1 / k!` for k = 3..7: the series of `e^u`.
pub const POW_EXP: [f32; 5] = [1.0 / 6.0, 1.0 / 24.0, 1.0 / 120.0, 1.0 / 720.0, 1.0 / 5040.0];

/// `x^p` for `x >= 0` and `0 < p <= 1` (Fourtakas' `(1 + ...)^(1/gamma)`), within 2 units
/// in the last place of float32: `2^(p log2 x)`, with `log2 x = e + log2 m` from the bits (m
/// in `[sqrt(1/2), sqrt(2))`, `ln m` by the series of `2 atanh(t)`, t = (m - 1)/(m + 1), to
/// t⁹) and `p e` exact (p split into a 12-bit head and the rest), then `2^n` from bits and
/// `2^f` (|f| <= 1/2) by the series of `e^u` to u⁷. Only float32 additions,
/// multiplications, one division, floors and bit moves, in this order, so the CPU's AVX2
/// lanes (surge-cpu `lanes.rs`) compute it bit for bit, where `f32::powf` (the C library's)
/// has no lane twin. 0 below the smallest normal float (and for NaN); a result past 2^127
/// saturates. The CUDA twin uses `powf` (`--use_fast_math`).
#[inline(always)]
pub fn pow_pos(x: f32, p: f32) -> f32 {
    if !(x >= f32::MIN_POSITIVE) {
        return 0.0;
    }
    let bits = x.to_bits();
    let mut e = (bits >> 23) as i32 - 127;
    let mut m = f32::from_bits((bits & 0x007f_ffff) | 0x3f80_0000);
    if m > std::f32::consts::SQRT_2 {
        m *= 0.5;
        e += 1;
    }
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let ln_m = t * (2.0 + t2 * (POW_LN[0] + t2 * (POW_LN[1] + t2 * (POW_LN[2] + t2 * POW_LN[3]))));
    // p e = p_hi e (exact: 12 bits times 8) + p_lo e; its whole part apart.
    let ef = e as f32;
    let p_hi = f32::from_bits(p.to_bits() & 0xffff_f000);
    let head = p_hi * ef;
    let n0 = (head + 0.5).floor();
    let g = (head - n0) + ((p - p_hi) * ef + p * (ln_m * std::f32::consts::LOG2_E));
    let n1 = (g + 0.5).floor();
    let u = (g - n1) * std::f32::consts::LN_2;
    let c = &POW_EXP;
    let q = 1.0 + u * (1.0 + u * (0.5 + u * (c[0] + u * (c[1] + u * (c[2] + u * (c[3] + u * c[4]))))));
    let n = (n0 + n1).max(-126.0).min(127.0);
    q * f32::from_bits(((n as i32 + 127) as u32) << 23)
}

#[cfg(test)]
mod tests {
    use super::pow_pos;

    /// Within 2 ulp of the float64 power where Fourtakas' term takes it (1 +- 2 %) and over
    /// every normal float to 2^126, for p = 1/7, 1/3, 1/1.4, 1/2 and 1 (1.2 ulp at worst when
    /// written); 0 at 0 and below.
    #[test]
    fn pow_pos_is_within_two_ulp() {
        let ulp = |v: f32| (f32::from_bits(v.to_bits() + 1) - v) as f64;
        let mut worst = 0.0f64;
        for p in [1.0 / 7.0, 1.0 / 3.0, 0.5, 1.0, 1.0 / 1.4] {
            let near_one = (-20000..=20000).map(|k| 1.0 + k as f32 * 1e-6);
            let wide = (-1260..=1260).map(|k| 2f32.powf(k as f32 * 0.1) * 1.2345);
            for x in near_one.chain(wide).filter(|x| x.is_normal()) {
                let want = (x as f64).powf(p as f64);
                let got = pow_pos(x, p);
                let err = (got as f64 - want).abs() / ulp(want as f32);
                worst = worst.max(err);
                assert!(err <= 2.0, "{x}^{p}: {got} against {want} ({err} ulp)");
            }
        }
        eprintln!("worst {worst:.2} ulp");
        for x in [0.0, -0.0, -1.0, 1e-40] {
            assert_eq!(pow_pos(x, 1.0 / 7.0), 0.0, "{x}");
        }
        assert_eq!(pow_pos(1.0, 1.0 / 7.0), 1.0);
    }
}
