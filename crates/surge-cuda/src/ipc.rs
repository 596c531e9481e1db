//! Transfers between GPUs of different processes on one node (MPI ranks): CUDA IPC.
//!
//! A device whose neighbour is a rank of the same node leaves the neighbour's particles (at
//! a rebuild) and its edges' force values (at each force pass) in buffers it *exports*
//! ([`Exported`]: plain `cuMemAlloc` memory, since pool allocations have no IPC handle),
//! and sends a [`Shared`] message over MPI: the buffer's IPC handle, counts, and for the
//! force values the handle of an interprocess event recorded after them. The neighbour
//! maps the buffer once ([`Imports`], cached by handle) and copies from it on its own
//! stream, as between GPUs of one process ([`crate::peer`]); the bytes never touch the host.
//!
//! # Who may touch what, and when
//!
//! No `Arc` can tell a sender that a receiver in another process is done, so the order of
//! the exchange does:
//!
//! - **Rebuild particles.** The sender synchronises its stream after the gathers, before
//!   the message leaves, so the receiver copies finished data. Each side has two buffers
//!   used in turn: the sender gathers into one only after it has received the neighbour's
//!   particles of the rebuild before (every rebuild sends, then receives, on every link),
//!   and the neighbour sends those only after its copies of the rebuild before that are over
//!   (`rebuild_end_peer` synchronises). So when a buffer is rewritten, the copies from it,
//!   two rebuilds ago, are over.
//! - **Edge force values.** As within a process ([`crate::peer`]): the receiver's copy is
//!   over (synchronised) before it enters the next reduction, and the sender rewrites the
//!   values only after one. The receiver's stream waits on the interprocess event, which
//!   the sender recorded before its message left.
//! - **Growing a buffer.** A buffer that is too small is replaced; the old one is kept
//!   until the backend is dropped (freeing exported memory while another process maps it
//!   is undefined), which costs little: buffers grow with headroom, rarely.
//!
//! Whether two ranks reach each other is tried once ([`offer`], [`accept`]): a small
//! exported buffer holding a pattern, opened and read by the neighbour, after checking it
//! runs on the same machine (boot id and host name). Any failure means the host path.

use cudarc::driver::{result, sys, CudaContext, CudaStream, DriverError};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// An IPC handle's bytes (memory or event: both are 64 bytes).
type Handle = Vec<u8>;

/// What travels over MPI to a neighbour on another rank of the node.
#[derive(Serialize, Deserialize, Debug)]
pub(crate) enum Shared {
    /// Particles at a rebuild: `count` particles' conserved buffers of the set `buffers`,
    /// one buffer after the other, in the exported buffer `mem` (ready: the sender
    /// synchronised).
    Particles { mem: Handle, count: u64, buffers: u32 },
    /// An edge's force values: `count` Force values, then `count` Shift values when
    /// `shift`, in `mem`, valid once `event` (interprocess) has completed.
    Forces { mem: Handle, event: Handle, count: u64, shift: bool },
    /// A trial of the link ([`offer`]): the machine, and the pattern `mem` holds.
    Offer { machine: String, mem: Handle, pattern: [u32; 4] },
}

impl Shared {
    pub fn to_bytes(&self) -> Vec<u8> {
        postcard::to_stdvec(self).expect("an IPC message serialises")
    }
    pub fn from_bytes(b: &[u8]) -> Result<Shared, String> {
        postcard::from_bytes(b).map_err(|e| format!("a malformed device block from a neighbouring rank: {e}"))
    }
}

/// Device memory another process may map: `cuMemAlloc`, with its IPC handle. Freed when
/// dropped, with its context bound.
pub(crate) struct Exported {
    ctx: Arc<CudaContext>,
    pub ptr: sys::CUdeviceptr,
    pub bytes: usize,
    pub handle: Handle,
}

impl Exported {
    /// At least `bytes` bytes on `ctx`'s GPU (binds `ctx`).
    pub fn new(ctx: &Arc<CudaContext>, bytes: usize) -> Result<Exported, DriverError> {
        ctx.bind_to_thread()?;
        let bytes = bytes.max(256);
        let mut ptr = 0;
        // SAFETY: the driver writes one pointer.
        unsafe { sys::cuMemAlloc_v2(&mut ptr, bytes) }.result()?;
        let mut h = std::mem::MaybeUninit::<sys::CUipcMemHandle>::uninit();
        // SAFETY: `ptr` is the base of a live cuMemAlloc allocation; the driver writes the handle.
        let r = unsafe { sys::cuIpcGetMemHandle(h.as_mut_ptr(), ptr) }.result();
        if let Err(e) = r {
            // SAFETY: allocated above, used by nothing.
            unsafe { sys::cuMemFree_v2(ptr) };
            return Err(e);
        }
        // SAFETY: initialised by the successful call.
        let h = unsafe { h.assume_init() };
        Ok(Exported { ctx: ctx.clone(), ptr, bytes, handle: to_bytes(&h.reserved) })
    }
}

impl Drop for Exported {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: this allocation is freed once, here; the stream work that used it was
            // synchronised before the backend let it go.
            unsafe { sys::cuMemFree_v2(self.ptr) };
        }
    }
}

/// An event another process may wait on (interprocess, no timing).
pub(crate) struct SharedEvent {
    ctx: Arc<CudaContext>,
    ev: sys::CUevent,
    pub handle: Handle,
}

// SAFETY: a CUevent is a driver handle, usable from any thread with its context bound.
unsafe impl Send for SharedEvent {}

impl SharedEvent {
    pub fn new(ctx: &Arc<CudaContext>) -> Result<SharedEvent, DriverError> {
        ctx.bind_to_thread()?;
        let flags =
            sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32 | sys::CUevent_flags::CU_EVENT_INTERPROCESS as u32;
        let mut ev = std::ptr::null_mut();
        // SAFETY: the driver writes one event handle.
        unsafe { sys::cuEventCreate(&mut ev, flags) }.result()?;
        let mut h = std::mem::MaybeUninit::<sys::CUipcEventHandle>::uninit();
        // SAFETY: `ev` is a live interprocess event; the driver writes the handle.
        if let Err(e) = unsafe { sys::cuIpcGetEventHandle(h.as_mut_ptr(), ev) }.result() {
            // SAFETY: created above, used by nothing.
            unsafe { sys::cuEventDestroy_v2(ev) };
            return Err(e);
        }
        // SAFETY: initialised by the successful call.
        let h = unsafe { h.assume_init() };
        Ok(SharedEvent { ctx: ctx.clone(), ev, handle: to_bytes(&h.reserved) })
    }

    /// Record on `stream` (of this event's context).
    pub fn record(&self, stream: &CudaStream) -> Result<(), DriverError> {
        // SAFETY: both handles are alive.
        unsafe { sys::cuEventRecord(self.ev, stream.cu_stream()) }.result()
    }
}

impl Drop for SharedEvent {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_ok() {
            // SAFETY: destroyed once, here.
            unsafe { sys::cuEventDestroy_v2(self.ev) };
        }
    }
}

/// The neighbours' exported memory and events this device mapped, by handle; unmapped when
/// dropped.
pub(crate) struct Imports {
    ctx: Arc<CudaContext>,
    mems: Vec<(Handle, sys::CUdeviceptr)>,
    events: Vec<(Handle, sys::CUevent)>,
}

// SAFETY: driver handles and device addresses, used with the context bound.
unsafe impl Send for Imports {}

/// An IPC handle's bytes (both kinds hold 64 C chars).
fn to_bytes(reserved: &[std::ffi::c_char; 64]) -> Handle {
    reserved.iter().map(|&c| c as u8).collect()
}

/// The 64 C chars of a handle from its bytes.
fn reserved(h: &[u8], what: &str) -> Result<[std::ffi::c_char; 64], String> {
    let r: [u8; 64] = h.try_into().map_err(|_| format!("an IPC {what} handle of {} bytes (expected 64)", h.len()))?;
    Ok(r.map(|b| b as std::ffi::c_char))
}

fn mem_handle(h: &[u8]) -> Result<sys::CUipcMemHandle, String> {
    Ok(sys::CUipcMemHandle { reserved: reserved(h, "memory")? })
}

fn event_handle(h: &[u8]) -> Result<sys::CUipcEventHandle, String> {
    Ok(sys::CUipcEventHandle { reserved: reserved(h, "event")? })
}

impl Imports {
    pub fn new(ctx: &Arc<CudaContext>) -> Imports {
        Imports { ctx: ctx.clone(), mems: Vec::new(), events: Vec::new() }
    }

    /// The address, in this device's context, of the exported memory `h` (mapped at first
    /// use). The context must be bound.
    pub fn mem(&mut self, h: &[u8]) -> Result<sys::CUdeviceptr, String> {
        if let Some((_, p)) = self.mems.iter().find(|(k, _)| k == h) {
            return Ok(*p);
        }
        let handle = mem_handle(h)?;
        let mut ptr = 0;
        let flags = sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32;
        // SAFETY: the driver writes one pointer; the handle is plain bytes.
        unsafe { sys::cuIpcOpenMemHandle_v2(&mut ptr, handle, flags) }
            .result()
            .map_err(|e| format!("mapping a neighbouring rank's GPU memory (cuIpcOpenMemHandle): {e:?}"))?;
        self.mems.push((h.to_vec(), ptr));
        Ok(ptr)
    }

    /// The exported event `h` (opened at first use). The context must be bound.
    pub fn event(&mut self, h: &[u8]) -> Result<sys::CUevent, String> {
        if let Some((_, e)) = self.events.iter().find(|(k, _)| k == h) {
            return Ok(*e);
        }
        let handle = event_handle(h)?;
        let mut ev = std::ptr::null_mut();
        // SAFETY: the driver writes one event handle.
        unsafe { sys::cuIpcOpenEventHandle(&mut ev, handle) }
            .result()
            .map_err(|e| format!("opening a neighbouring rank's event (cuIpcOpenEventHandle): {e:?}"))?;
        self.events.push((h.to_vec(), ev));
        Ok(ev)
    }

    /// Unmap `h` (after a trial).
    fn close(&mut self, h: &[u8]) {
        if let Some(i) = self.mems.iter().position(|(k, _)| k == h) {
            let (_, p) = self.mems.swap_remove(i);
            // SAFETY: mapped by `mem`, unmapped once.
            unsafe { sys::cuIpcCloseMemHandle(p) };
        }
    }
}

impl Drop for Imports {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        for (_, p) in self.mems.drain(..) {
            // SAFETY: mapped by `mem`, unmapped once.
            unsafe { sys::cuIpcCloseMemHandle(p) };
        }
        for (_, e) in self.events.drain(..) {
            // SAFETY: opened by `event`, destroyed once.
            unsafe { sys::cuEventDestroy_v2(e) };
        }
    }
}

/// Make `stream` wait for `ev` (an event of another process).
pub(crate) fn wait(stream: &CudaStream, ev: sys::CUevent) -> Result<(), DriverError> {
    // SAFETY: both handles are alive.
    unsafe { sys::cuStreamWaitEvent(stream.cu_stream(), ev, 0) }.result()
}

/// This machine, as far as IPC goes: the kernel's boot id and the host name.
fn machine() -> String {
    let read = |p: &str| std::fs::read_to_string(p).map(|s| s.trim().to_string()).unwrap_or_default();
    format!("{}/{}", read("/proc/sys/kernel/random/boot_id"), read("/proc/sys/kernel/hostname"))
}

/// A trial of the link for a neighbour in another process: an exported buffer holding a
/// pattern (kept by the caller until it is dropped), and the message naming it.
pub(crate) fn offer(stream: &Arc<CudaStream>) -> Result<(Exported, Vec<u8>), DriverError> {
    let ctx = stream.context();
    let buf = Exported::new(ctx, 16)?;
    let pattern = [0x5e6e_0001, std::process::id(), ctx.ordinal() as u32, 0x5e6e_0002];
    // SAFETY: the buffer holds at least 16 bytes; the copy is synchronous.
    unsafe { result::memcpy_htod_sync(buf.ptr, &pattern[..]) }?;
    let msg = Shared::Offer { machine: machine(), mem: buf.handle.clone(), pattern }.to_bytes();
    Ok((buf, msg))
}

/// Whether this device reads the pattern of a neighbour's [`offer`]: Err with the reason
/// when not.
pub(crate) fn accept(imports: &mut Imports, offer: &[u8]) -> Result<(), String> {
    let Shared::Offer { machine: theirs, mem, pattern } = Shared::from_bytes(offer)? else {
        return Err("not an offer".into());
    };
    if theirs != machine() {
        return Err(format!("another machine ({theirs})"));
    }
    let ptr = imports.mem(&mem)?;
    let mut got = [0u32; 4];
    // SAFETY: the neighbour's buffer holds at least 16 bytes and stays allocated while its
    // backend lives (it answers this trial first).
    let r = unsafe { result::memcpy_dtoh_sync(&mut got[..], ptr) };
    imports.close(&mem);
    r.map_err(|e| format!("reading a neighbouring rank's GPU memory: {e:?}"))?;
    if got != pattern {
        return Err(format!("read {got:?} from a neighbouring rank's GPU, expected {pattern:?}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_survive_their_bytes_and_bad_handles_are_refused() {
        let h: Vec<u8> = (0..64).collect();
        let m = Shared::Forces { mem: h.clone(), event: h.clone(), count: 7, shift: true };
        match Shared::from_bytes(&m.to_bytes()).unwrap() {
            Shared::Forces { mem, event, count, shift } => {
                assert_eq!((mem, event, count, shift), (h.clone(), h.clone(), 7, true));
            }
            other => panic!("{other:?}"),
        }
        assert!(Shared::from_bytes(&[9, 9, 9]).is_err());
        assert!(mem_handle(&h).is_ok() && event_handle(&h).is_ok());
        assert!(mem_handle(&h[..63]).unwrap_err().contains("63 bytes"));
        assert!(event_handle(&[]).unwrap_err().contains("0 bytes"));
    }
}
