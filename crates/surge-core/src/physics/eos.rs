//! Tait equation of state over the centred relative density `d = rho/rho0 - 1`.

/// Tait coefficient `B = c0² rho0 / gamma`.
pub fn tait_b(c0: f64, rho0: f64, gamma: f64) -> f64 {
    c0 * c0 * rho0 / gamma
}

/// Pressure from relative density: `p = B ((1 + d)^gamma - 1) + p_b`.
#[inline(always)]
pub fn tait_pressure(d: f32, b: f32, gamma: f32, p_b: f32) -> f32 {
    b * ((1.0 + d).powf(gamma) - 1.0) + p_b
}

/// Relative density from pressure, the inverse of [`tait_pressure`].
#[inline(always)]
pub fn tait_density(p: f32, b: f32, gamma: f32, p_b: f32) -> f32 {
    ((p - p_b) / b + 1.0).powf(1.0 / gamma) - 1.0
}

/// Speed of sound at relative density d: `c = c0 (1 + d)^((gamma - 1)/2)`.
#[inline(always)]
pub fn tait_sound_speed(d: f32, c0: f32, gamma: f32) -> f32 {
    c0 * (1.0 + d).powf(0.5 * (gamma - 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eos_round_trip() {
        let b = tait_b(40.0, 1000.0, 7.0) as f32;
        for d in [-0.02f32, -0.001, 0.0, 0.003, 0.01, 0.05] {
            for pb in [0.0f32, 1.0e4] {
                let p = tait_pressure(d, b, 7.0, pb);
                let back = tait_density(p, b, 7.0, pb);
                // float32: relative density carries ~1e-7 absolute error per operation.
                assert!((back - d).abs() < 2e-6, "d={d} p={p} back={back}");
            }
        }
        assert_eq!(tait_pressure(0.0, b, 7.0, 0.0), 0.0);
        // Small compressions: p ≈ c0² rho0 d.
        let p = tait_pressure(1e-4, b, 7.0, 0.0) as f64;
        assert!((p / (1600.0 * 1000.0 * 1e-4) - 1.0).abs() < 1e-3);
    }
}
