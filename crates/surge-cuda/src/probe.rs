//! Finding CUDA without crashing: cudarc panics when it calls into a library that is not
//! there, so every entry point first checks that the library loads.

use cudarc::driver::CudaContext;

/// A visible GPU.
#[derive(Debug, Clone)]
pub struct GpuInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Device name.
    pub name: String,
    /// Total memory in bytes.
    pub memory: usize,
    /// Compute capability (major, minor).
    pub compute_capability: (i32, i32),
}

pub(crate) fn no_panic<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let m = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
        Err(m.unwrap_or_else(|| "the CUDA library panicked".into()))
    })
}

/// True when the CUDA driver library (libcuda) can be loaded.
pub fn driver_present() -> bool {
    // SAFETY: only tries to open the library; nothing is called through it.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// True when the NVRTC library can be loaded.
pub fn nvrtc_present() -> bool {
    // SAFETY: as above.
    unsafe { cudarc::nvrtc::sys::is_culib_present() }
}

/// The GPUs the driver sees, or why there are none.
pub fn gpus() -> Result<Vec<GpuInfo>, String> {
    if !driver_present() {
        return Err("the CUDA driver library (libcuda.so) was not found: no NVIDIA driver on this machine".into());
    }
    no_panic(|| {
        let count = CudaContext::device_count().map_err(|e| format!("the CUDA driver did not start: {e:?}"))?;
        if count == 0 {
            return Err("the CUDA driver sees no GPU".into());
        }
        (0..count as usize)
            .map(|ordinal| {
                let ctx = CudaContext::new(ordinal).map_err(|e| format!("GPU {ordinal}: {e:?}"))?;
                Ok(GpuInfo {
                    ordinal,
                    name: ctx.name().map_err(|e| format!("{e:?}"))?,
                    memory: ctx.total_mem().map_err(|e| format!("{e:?}"))?,
                    compute_capability: ctx.compute_capability().map_err(|e| format!("{e:?}"))?,
                })
            })
            .collect()
    })
}

/// NVRTC's version, or why it cannot be used.
pub fn nvrtc_version() -> Result<(i32, i32), String> {
    if !nvrtc_present() {
        return Err("the NVRTC library (libnvrtc.so) was not found: install the CUDA toolkit or `pip install nvidia-cuda-nvrtc` and put its lib folder on LD_LIBRARY_PATH".into());
    }
    no_panic(|| {
        let (mut major, mut minor) = (0, 0);
        // SAFETY: NVRTC writes two integers and keeps no pointer.
        unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) }
            .result()
            .map_err(|e| format!("nvrtcVersion failed: {e:?}"))?;
        Ok((major, minor))
    })
}
