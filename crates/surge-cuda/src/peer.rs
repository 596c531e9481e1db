//! Transfers between GPUs of one process: what a device leaves on its GPU for a neighbour
//! ([`surge_core::backend::DeviceBlock`]), and the copies the neighbour makes from it.
//!
//! # Who may touch what, and when
//!
//! Every device has a worker thread; each backend issues work on its own GPU's (legacy
//! default) stream only. A receiver copies from the sender's memory on *its own* stream,
//! after making that stream wait for an event the sender recorded after writing the data
//! (cross-context event waits are allowed). Neither stream ever waits for the other in the
//! opposite direction, so the GPUs cannot deadlock. What remains is the sender's side: it
//! must not rewrite (or free) memory a receiver has not finished copying.
//!
//! **Rebuild particles.** The sender gathers each neighbour's particles into a staging buffer
//! of its own (`Staging`, used for nothing else) and records `ready` after the gathers.
//! The block holds the staging buffer by `Arc`. The receiver drops its block only after
//! synchronising its stream behind the copies (also on its error paths), so while a copy
//! may be in flight the sender's `Arc` is not the only one. The sender reuses a staging
//! buffer only when it is the only holder ([`Arc::get_mut`]); otherwise it allocates a new
//! one, and the old one is freed by whoever drops it last, with the sender's context bound
//! (`Staging`'s `Drop`). This needs no handshake at all (in a run, the reductions of the
//! steps between two rebuilds make the fallback allocation rare: it happens when two
//! rebuilds follow each other with no step between, as at a restart).
//!
//! **Edge force values.** The block points into the sender's force (and shifting) buffer, at
//! the edge's range, and holds the sender's `edge_done` event (by `Arc`, so it outlives the
//! block), recorded after the edge forces. The receiver waits on it, copies, synchronises
//! its stream, then drops the block: when `set_copy_forces_peer` returns, the copy is over.
//! The sender rewrites those ranges only in its next force pass for the edges, at a rebuild
//! (the force buffer is the sort's scratch, and buffers may be reallocated) or at an import.
//! The smart worker reaches each of these only after a reduction (`Worker::reduce`: the dt
//! reduction after every first force pass, the displacement reduction at the end of every
//! step), and a reduction completes only when every device has entered it, hence after
//! every receiver's `set_copy_forces_peer` of the pass before has returned. Inner forces,
//! updates and the copies from the neighbours touch other ranges, or only read. As a guard,
//! the backend fails (instead of racing) when it is about to rewrite those ranges while a
//! block still holds its `edge_done` (`Arc::strong_count`): the caller broke the order.
//!
//! A device that fails sends failure notices instead of blocks; a block received and not
//! used is dropped without any copy made. The sender's context outlives every block (each
//! holds it by `Arc`; a primary context stays while retained).
//!
//! Copies are plain `cuMemcpyDtoDAsync` within one context (two devices on one GPU) and
//! between GPUs that reach each other's memory (peer access, enabled by [`reach`]; unified
//! addresses name the source); `cuMemcpyPeerAsync` otherwise, which the driver stages
//! through the host: slower, still correct. (`tests/peer_copy.rs` checks on two GPUs that
//! such a copy does not wait for the work running on the source GPU: the neighbour's inner
//! forces.)

use cudarc::driver::{result, sys, CudaContext, CudaEvent, CudaSlice, CudaStream, DriverError};
use std::sync::Arc;
use surge_core::buffers::BufferSet;

/// A sender's staging buffer for a neighbour's particles at a rebuild.
pub(crate) struct Staging {
    /// The particles' conserved buffers one after the other (in [`BufferSet::iter`] order),
    /// each `count * words per particle` words.
    pub buf: CudaSlice<u32>,
    /// Recorded on the sender's stream after the gathers into `buf`.
    pub ready: CudaEvent,
    /// The sender's context, bound when the last holder drops the buffer (the free is queued
    /// on the sender's default stream, which is the current context's).
    ctx: Arc<CudaContext>,
}

impl Staging {
    /// A staging buffer of `words` words on the stream's GPU.
    pub fn new(stream: &Arc<CudaStream>, words: usize) -> Result<Staging, DriverError> {
        let ctx = stream.context().clone();
        Ok(Staging { buf: stream.alloc_zeros::<u32>(words.max(4))?, ready: ctx.new_event(None)?, ctx })
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // The fields (buffer, event) are freed next, in the sender's context.
        let _ = self.ctx.bind_to_thread();
    }
}

/// A neighbour's particles at a rebuild, left on its GPU.
pub(crate) struct RebuildBlock {
    /// The sender's context.
    pub ctx: Arc<CudaContext>,
    /// Where the particles are (the sender may hold it too).
    pub staging: Arc<Staging>,
    /// Number of particles.
    pub count: usize,
    /// The conserved buffers held, in [`BufferSet::iter`] order.
    pub buffers: BufferSet,
}

/// A neighbour's force values of an edge, in its force (and shifting) buffer.
pub(crate) struct EdgeBlock {
    /// The sender's context.
    pub ctx: Arc<CudaContext>,
    /// Recorded on the sender's stream after the edge forces.
    pub done: Arc<CudaEvent>,
    /// Device address of the edge's first force value (4 words per particle).
    pub force: sys::CUdeviceptr,
    /// Device address of the edge's first shifting value, when shifting is on.
    pub shift: Option<sys::CUdeviceptr>,
    /// Number of particles of the edge.
    pub count: usize,
}

/// Queue a copy of `bytes` bytes from `src` (memory of `src_ctx`'s GPU) to `dst` (of
/// `stream`'s context) on `stream`. `mapped`: this GPU was given direct access to the
/// source's memory ([`reach`] returned true): then the copy is an ordinary device-to-device
/// copy over the mapping (unified addresses), which starts as soon as `stream` reaches it.
/// Else `cuMemcpyPeerAsync`, which the driver stages through the host where the GPUs cannot
/// reach each other (and which waits for the work running on the source GPU: 300 ms behind
/// a 300 ms kernel in `tests/peer_copy.rs` on two H200s, against 0.04 ms over the mapping).
///
/// # Safety
/// Both ranges must be allocated and stay so until the copy is over; nothing may write the
/// source until then.
pub unsafe fn copy(
    stream: &CudaStream,
    dst: sys::CUdeviceptr,
    src_ctx: &CudaContext,
    src: sys::CUdeviceptr,
    bytes: usize,
    mapped: bool,
) -> Result<(), DriverError> {
    if bytes == 0 {
        return Ok(());
    }
    let dst_ctx = stream.context();
    if mapped || dst_ctx.cu_ctx() == src_ctx.cu_ctx() {
        result::memcpy_dtod_async(dst, src, bytes, stream.cu_stream())
    } else {
        result::memcpy_peer_async(dst_ctx.cu_ctx(), dst, src_ctx.cu_ctx(), src, bytes, stream.cu_stream())
    }
}

/// Whether GPU `a` can read and write GPU `b`'s memory directly (`cuDeviceCanAccessPeer`):
/// NVLink or PCIe peer to peer. True for a GPU and itself.
pub fn peer_access(a: usize, b: usize) -> Result<bool, String> {
    if !crate::probe::driver_present() {
        return Err("the CUDA driver library (libcuda.so) was not found".into());
    }
    crate::probe::no_panic(|| {
        let e = |e: DriverError| format!("cuDeviceCanAccessPeer({a}, {b}): {e:?}");
        result::init().map_err(e)?;
        let da = result::device::get(a as i32).map_err(e)?;
        let db = result::device::get(b as i32).map_err(e)?;
        can_access(da, db).map_err(e)
    })
}

fn can_access(a: sys::CUdevice, b: sys::CUdevice) -> Result<bool, DriverError> {
    if a == b {
        return Ok(true);
    }
    let mut can = 0;
    // SAFETY: the driver writes one integer.
    unsafe { sys::cuDeviceCanAccessPeer(&mut can, a, b) }.result()?;
    Ok(can != 0)
}

/// Let `ctx`'s GPU reach `other`'s memory and the other way round, where the hardware allows
/// it: peer access between the contexts (ordinary allocations) and access to each GPU's
/// current memory pool (cudarc allocates from it, and pool allocations do not follow peer
/// access). Returns false when the GPUs cannot reach each other (copies then go through
/// the host inside the driver). Leaves `ctx` bound to the calling thread.
pub fn reach(ctx: &Arc<CudaContext>, other: &Arc<CudaContext>) -> Result<bool, DriverError> {
    let (a, b) = (ctx.cu_device(), other.cu_device());
    if a == b {
        return Ok(true);
    }
    if !can_access(a, b)? || !can_access(b, a)? {
        return Ok(false);
    }
    let r = (|| {
        for (me, peer) in [(ctx, other), (other, ctx)] {
            me.bind_to_thread()?;
            // SAFETY: both contexts are alive (held by Arc).
            match unsafe { sys::cuCtxEnablePeerAccess(peer.cu_ctx(), 0) }.result() {
                Ok(()) | Err(DriverError(sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)) => {}
                Err(e) => return Err(e),
            }
            pool_access(peer.cu_device(), me.cu_device())?;
        }
        Ok(true)
    })();
    ctx.bind_to_thread()?;
    r
}

/// Let GPU `reader` read and write allocations of GPU `owner`'s current memory pool (when the
/// owner has pools).
fn pool_access(owner: sys::CUdevice, reader: sys::CUdevice) -> Result<(), DriverError> {
    // SAFETY: reads a device attribute.
    let pools = unsafe {
        result::device::get_attribute(owner, sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)
    }?;
    if pools == 0 {
        return Ok(());
    }
    let mut pool: sys::CUmemoryPool = std::ptr::null_mut();
    // SAFETY: the driver writes one handle; the pool is the device's own (never destroyed).
    unsafe { sys::cuDeviceGetMemPool(&mut pool, owner) }.result()?;
    let desc = sys::CUmemAccessDesc {
        location: sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id: reader },
        flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
    };
    // SAFETY: one descriptor, read during the call.
    unsafe { sys::cuMemPoolSetAccess(pool, &desc, 1) }.result()
}
