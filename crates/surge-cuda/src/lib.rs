//! surge-cuda: the CUDA execution role. A device's whole step runs on its GPU: cell keys,
//! counting sort (own scan), cell ranges, forces, updates, reductions and gauges; particles
//! come back to the host only for output, for the neighbours at a rebuild, and the edge
//! forces each step (through pinned buffers), unless the neighbour is a GPU of the same
//! process (peer copies) or of another rank of the node that can map this GPU's memory
//! (CUDA IPC): then both go GPU to GPU. Kernels (kernels/*.cu, embedded) are
//! compiled at start-up with NVRTC for the case's options and the GPU's architecture.
#![warn(missing_docs)]

mod backend;
pub mod compile;
mod ipc;
pub mod peer;
mod probe;

pub use backend::{
    bytes_per_particle, bytes_per_particle_with, headroom_layers, team_bytes_per_particle, CudaBackend, HOST_CHUNK,
};
pub use peer::peer_access;
pub use probe::{driver_present, gpus, nvrtc_present, nvrtc_version, GpuInfo};

/// The whole grid the CUDA backend keys a case on (half-support cells, reach 2; cells of the
/// whole support with the `cta` traversal): what the runtime cuts into slices before the
/// devices load their particles.
pub fn grid_for(case: &surge_core::Case) -> Result<surge_core::grid::Grid, String> {
    backend::cuda_grid(case)
}
