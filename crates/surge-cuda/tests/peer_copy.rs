//! A device copies its neighbours' edge force values from their GPUs while they compute
//! their inner forces (docs/PERFORMANCE.md, the timeline of a step). That holds only if a
//! copy from another GPU's memory, queued on this GPU's stream, does not wait for the work
//! running on the other GPU. This test runs a kernel that spins for a while on GPU 1, then
//! copies a buffer of GPU 1 to GPU 0 with [`surge_cuda::peer::copy`] (what the backend uses)
//! and checks that the copy is over while the kernel still runs. For comparison it prints
//! the same for `cuMemcpyPeerAsync`, whether or not that waits.
//!
//! Needs two GPUs; says it skipped otherwise (`scripts/gpu_check.sh` and the node scripts
//! run it on the GPU hosts).

use cudarc::driver::{result, sys, CudaContext, DevicePtr, LaunchConfig, PushKernelArg};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SPIN: &str = r#"
extern "C" __global__ void spin(long long cycles) {
    long long t = clock64();
    while (clock64() - t < cycles) {}
}
"#;

/// Edge values of ~100 000 particles (16 bytes each), as in the benchmarks.
const WORDS: usize = 400_000;

/// Spin on GPU 1 for about `spin`, queue `copy` from GPU 1 to GPU 0 on GPU 0's stream and
/// wait for it; returns how long the wait took and whether GPU 1 still ran the kernel then.
fn copy_while_busy(
    c0: &Arc<CudaContext>,
    c1: &Arc<CudaContext>,
    spin: Duration,
    copy: impl FnOnce(sys::CUdeviceptr, sys::CUdeviceptr, &cudarc::driver::CudaStream),
) -> (Duration, bool) {
    let (s0, s1) = (c0.default_stream(), c1.default_stream());
    let src = s1.alloc_zeros::<u32>(WORDS).unwrap();
    let dst = s0.alloc_zeros::<u32>(WORDS).unwrap();
    s1.synchronize().unwrap();
    s0.synchronize().unwrap();
    let ptx = cudarc::nvrtc::compile_ptx(SPIN).unwrap();
    let f = c1.load_module(ptx).unwrap().load_function("spin").unwrap();
    let khz = c1.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_CLOCK_RATE).unwrap() as f64;
    let cycles = (khz * 1e3 * spin.as_secs_f64()) as i64;
    let mut b = s1.launch_builder(&f);
    b.arg(&cycles);
    let one = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (1, 1, 1), shared_mem_bytes: 0 };
    // SAFETY: the kernel takes one 64-bit integer.
    unsafe { b.launch(one) }.unwrap();
    let done = c1.new_event(None).unwrap();
    done.record(&s1).unwrap();
    let t = Instant::now();
    let (d, s) = (dst.device_ptr(&s0).0, src.device_ptr(&s1).0);
    c0.bind_to_thread().unwrap();
    copy(d, s, &s0);
    s0.synchronize().unwrap();
    let waited = t.elapsed();
    let busy = !done.is_complete();
    s1.synchronize().unwrap();
    (waited, busy)
}

#[test]
fn a_copy_from_another_gpu_does_not_wait_for_its_work() {
    let gpus = if surge_cuda::driver_present() { surge_cuda::gpus().map(|g| g.len()).unwrap_or(0) } else { 0 };
    if gpus < 2 {
        eprintln!("skipped: needs two GPUs ({gpus} found)");
        return;
    }
    let (c0, c1) = (CudaContext::new(0).unwrap(), CudaContext::new(1).unwrap());
    let mapped = surge_cuda::peer::reach(&c0, &c1).unwrap();
    let spin = Duration::from_millis(300);
    let bytes = 4 * WORDS;
    let (peer_wait, peer_busy) = copy_while_busy(&c0, &c1, spin, |d, s, st| {
        // SAFETY: both buffers hold `bytes` bytes and outlive the copy (synchronised).
        unsafe { result::memcpy_peer_async(c0.cu_ctx(), d, c1.cu_ctx(), s, bytes, st.cu_stream()) }.unwrap()
    });
    println!(
        "cuMemcpyPeerAsync: {:.3} ms, GPU 1 {} busy when it ended",
        1e3 * peer_wait.as_secs_f64(),
        if peer_busy { "still" } else { "no longer" }
    );
    let (wait, busy) = copy_while_busy(&c0, &c1, spin, |d, s, st| {
        // SAFETY: as above.
        unsafe { surge_cuda::peer::copy(st, d, &c1, s, bytes, mapped) }.unwrap()
    });
    println!(
        "surge_cuda::peer::copy (peer access {}): {:.3} ms, GPU 1 {} busy when it ended",
        if mapped { "on" } else { "off" },
        1e3 * wait.as_secs_f64(),
        if busy { "still" } else { "no longer" }
    );
    assert!(
        busy,
        "the copy from GPU 1 waited {:.0} ms for the kernel running there (spinning {:.0} ms)",
        1e3 * wait.as_secs_f64(),
        1e3 * spin.as_secs_f64()
    );
}
