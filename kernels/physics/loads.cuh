// Twin of crates/surge-core/src/physics/loads.rs: the force a fluid particle exerts on a
// boundary particle, from the momentum terms of the force pass.
#pragma once
#include "vec.cuh"
#include "pair.cuh"

// Boundary particle b, fluid neighbour f at r = x_b - x_f (within the support, r2 > 0): adds
// to `out` the force of f on b, -m_f a_fb, where a_fb is what fluid_pair gives f from b
// (wall_b: b's wall normal and distance, read with laminar viscosity only; mdbc_b: b's mDBC
// values of the last mDBC pass, read with MDBC only).
__device__ __forceinline__ void load_pair(float3 r, float r2, const PairParticle &pb, const PairParticle &pf,
                                          float4 wall_b, float4 mdbc_b, float3 &out) {
    Accum a = {v3(0.0f, 0.0f, 0.0f), 0.0f, 0.0f, v3(0.0f, 0.0f, 0.0f), 0.0f};
    fluid_pair(-r, r2, pf, pb, false, wall_b, mdbc_b, a);
    out -= a.acc * pf.m;
}
