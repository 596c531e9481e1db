//! Host buffers for particles in flight between devices, kept from one rebuild to the next.
//!
//! Over a host link (devices on other nodes, or `SURGE_DEVICE_LINKS=host`) every rebuild
//! moves a few hundred thousand particles per side through host memory: the sender copies
//! them from its device into host vectors that MPI (or a channel) then owns, the receiver
//! gets them into host vectors and uploads them. Fresh vectors of tens of megabytes cost
//! as much as the copies themselves (the pages are faulted in and zeroed on first touch),
//! so these vectors come from one pool of the process and go back to it when their
//! particles are uploaded or sent: after the first rebuilds the pages are resident and
//! reused. The contents of a taken vector are unspecified (zeros or an earlier rebuild's
//! values); its users overwrite every element.
//!
//! The vectors are not page-locked: pinning host memory the pool does not own to the end
//! (a vector may leave it, e.g. into a CPU backend's arrays) would leave a stale
//! registration behind when it is freed. Resident pageable memory is what the copies need
//! to run at the link's speed instead of the allocator's.

use std::sync::Mutex;

/// The most vectors the pool keeps (the smallest go first): a rebuild of one device takes at
/// most two sides x two directions x the conserved buffers (6 with mDBC).
const KEEP: usize = 96;

/// Free vectors as words, smallest capacity first.
static POOL: Mutex<Vec<Vec<u32>>> = Mutex::new(Vec::new());

fn words_of<T: bytemuck::Pod>() -> Option<usize> {
    let (size, align) = (std::mem::size_of::<T>(), std::mem::align_of::<T>());
    (align == 4 && size % 4 == 0 && size > 0).then_some(size / 4)
}

/// A vector of `n` elements from the pool (a fresh one when none is large enough), for
/// plain 4-byte-aligned element types; of `n` zeroed elements for others.
pub fn take<T: bytemuck::Pod>(n: usize) -> Vec<T> {
    let Some(per) = words_of::<T>() else {
        return vec![T::zeroed(); n];
    };
    let words = n * per;
    let found = {
        let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
        pool.iter().position(|v| v.capacity() >= words).map(|k| pool.remove(k))
    };
    let mut v = found.unwrap_or_else(|| {
        // A quarter more than asked, so the next rebuild's slightly larger share fits; a
        // whole number of 16-byte elements, so every element type can reuse it.
        let cap = (words + words / 4).next_multiple_of(4);
        vec![0u32; cap]
    });
    // Within the capacity: no reallocation, and only a tail not yet written is zeroed.
    v.resize(words, 0);
    // Same alignment, and length and capacity (a multiple of 4 words) are whole elements:
    // the cast keeps the allocation.
    bytemuck::allocation::try_cast_vec(v).unwrap_or_else(|_| vec![T::zeroed(); n])
}

/// Give a vector back to the pool (those of other element types are dropped).
pub fn give<T: bytemuck::Pod>(v: Vec<T>) {
    if words_of::<T>().is_none() || v.capacity() == 0 {
        return;
    }
    let Ok(w) = bytemuck::allocation::try_cast_vec::<T, u32>(v) else {
        return;
    };
    // Only whole 16-byte elements, so that any element type can take it again.
    if w.capacity() % 4 != 0 {
        return;
    }
    let mut pool = POOL.lock().unwrap_or_else(|e| e.into_inner());
    let at = pool.partition_point(|p| p.capacity() < w.capacity());
    pool.insert(at, w);
    if pool.len() > KEEP {
        pool.remove(0);
    }
}

/// Bytes the pool holds (for tests and the log).
pub fn held_bytes() -> usize {
    POOL.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|v| 4 * v.capacity()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_given_back_is_taken_again_without_a_new_allocation() {
        // Sizes no other test of this process asks for, so the pool's other users (tests
        // run in parallel) take none of these.
        let n = 123_457;
        let mut a = take::<[f32; 4]>(n);
        assert_eq!(a.len(), n);
        a[n - 1] = [1.0, 2.0, 3.0, 4.0];
        let ptr = a.as_ptr() as usize;
        give(a);
        // Another element type of the same or a smaller size reuses the allocation.
        let b = take::<[u32; 2]>(2 * n);
        assert_eq!(b.len(), 2 * n);
        assert_eq!(b.as_ptr() as usize, ptr);
        assert_eq!(b[2 * n - 1], [f32::to_bits(3.0), f32::to_bits(4.0)], "contents are those left behind");
        give(b);
        // Larger than its capacity (a quarter over n x 4 words): a fresh vector.
        let c = take::<[f32; 4]>(2 * n);
        assert_ne!(c.as_ptr() as usize, ptr);
        assert_eq!(c.len(), 2 * n);
        // Other alignments are plain zeroed vectors and are not kept.
        let d = take::<u8>(7);
        assert_eq!(d, vec![0u8; 7]);
        give(d);
        give(c);
        assert!(held_bytes() >= 4 * 4 * n);
    }
}
