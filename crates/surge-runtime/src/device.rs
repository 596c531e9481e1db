//! Choosing the execution role: CPU cores, a GPU, or the best available.

use surge_core::backend::Backend;
use surge_core::geometry::Filled;
use surge_core::Case;
use surge_cpu::CpuBackend;
use surge_cuda::CudaBackend;

/// Which backend to run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// A GPU when one is usable (driver, GPU and NVRTC found), else the CPU.
    Auto,
    /// CPU cores.
    Cpu,
    /// An NVIDIA GPU.
    Cuda,
}

/// Where to run and with how much.
#[derive(Debug, Clone, Copy)]
pub struct DeviceRequest {
    /// Backend.
    pub backend: BackendChoice,
    /// CPU threads (0: all cores).
    pub threads: usize,
    /// GPU ordinal.
    pub gpu: usize,
}

/// A backend loaded with the case's particles, and why it was chosen (for the log).
pub struct Chosen {
    /// The backend.
    pub backend: Box<dyn Backend>,
    /// One line: what runs where, and for `auto` why.
    pub note: String,
    /// CPU threads used (1 for a GPU's driving thread).
    pub threads: usize,
}

/// Why no GPU can be used here, or `None` when one can.
pub fn cuda_unavailable(gpu: usize) -> Option<String> {
    if let Err(e) = surge_cuda::nvrtc_version() {
        return Some(e);
    }
    match surge_cuda::gpus() {
        Err(e) => Some(e),
        Ok(g) if gpu >= g.len() => Some(format!("there is no GPU {gpu}: {} visible", g.len())),
        Ok(_) => None,
    }
}

/// Load the filled case on the requested backend.
pub fn load(case: &Case, filled: &Filled, req: DeviceRequest) -> Result<Chosen, String> {
    let cpu = |note: String| -> Result<Chosen, String> {
        let b = CpuBackend::new(case, filled, req.threads)?;
        let threads = b.threads();
        Ok(Chosen { note: format!("{note}cpu ({threads} threads)"), backend: Box::new(b), threads })
    };
    let cuda = |note: &str| -> Result<Chosen, String> {
        let b = CudaBackend::new(case, filled, req.gpu)?;
        let note = format!("{note}{}; {}", b.name(), b.compile_note());
        Ok(Chosen { backend: Box::new(b), note, threads: 1 })
    };
    match req.backend {
        BackendChoice::Cpu => cpu(String::new()),
        BackendChoice::Cuda => match cuda_unavailable(req.gpu) {
            Some(why) => Err(format!("--backend cuda: {why}")),
            None => cuda(""),
        },
        BackendChoice::Auto => match cuda_unavailable(req.gpu) {
            Some(why) => cpu(format!("backend auto: no usable GPU ({why}); running on ")),
            None => cuda("backend auto: "),
        },
    }
}
