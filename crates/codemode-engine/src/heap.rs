//! The VM's heap: the allocator QuickJS gets, which enforces `Limits::memory_bytes` itself and
//! records every allocation it refuses.
//!
//! Why not QuickJS's own limit (`JS_SetMemoryLimit`): QuickJS checks it in `js_malloc_rt` before
//! it calls the allocator, so a refusal there leaves no trace outside the engine, and the engine
//! reports exhausted memory to the guest as an ordinary exception, often `null` (when even the
//! `InternalError` could not be allocated), which a guest can also throw itself. Classifying a
//! failure as the memory limit therefore needs a fact the guest cannot forge: that this allocator
//! refused an allocation during the step ([`HeapGauge`]). The engine sets no QuickJS limit, so
//! this allocator is the only place the budget is enforced.
//!
//! The budget counts the bytes this allocator hands out plus a small header each: QuickJS's
//! 4 KiB arenas for its small blocks, every larger block individually. QuickJS's own
//! `malloc_size` (what `memory_usage()` reports, and what parked runs are measured in) keeps
//! counting each block it carves, so the two differ by the arenas' free space.
//!
//! Memory comes from the system allocator (`malloc`), as with QuickJS's default functions, never
//! from the process's `#[global_allocator]`: a host that counts its own allocations does not
//! count VM heaps.
//!
//! The second module allowed `unsafe` (after bytecode.rs): rquickjs's `Allocator` is an unsafe
//! trait over raw pointers. Each block is `HEADER` bytes of bookkeeping (the caller's size)
//! followed by the caller's bytes; every `unsafe` block below says why it is sound.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rquickjs::allocator::Allocator;

/// Bytes before each block: its size. 16 keeps every block 16-byte aligned, like `malloc`'s.
const HEADER: usize = 16;
/// Alignment of every block (and of its header).
const ALIGN: usize = 16;

/// What the VM's allocator tells the engine: how many allocations it refused (never reset: the
/// engine compares counts taken at the start and end of a step) and how many bytes it holds.
#[derive(Debug, Default)]
pub(crate) struct HeapGauge {
    refused: AtomicU64,
    held: AtomicUsize,
}

impl HeapGauge {
    /// Allocations refused so far (over the budget, or the system allocator failed).
    pub(crate) fn refusals(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }

    /// Bytes the allocator holds now, headers included.
    pub(crate) fn held_bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    fn record_refusal(&self) {
        self.refused.fetch_add(1, Ordering::SeqCst);
    }
}

/// The allocator of one VM: at most `limit` bytes (headers included) live at once.
pub(crate) struct HeapAllocator {
    limit: usize,
    used: usize,
    gauge: Arc<HeapGauge>,
}

impl HeapAllocator {
    pub(crate) fn new(limit: usize, gauge: Arc<HeapGauge>) -> Self {
        Self {
            limit,
            used: 0,
            gauge,
        }
    }

    /// Records a new total of held bytes (read by the engine; one relaxed store).
    fn set_used(&mut self, used: usize) {
        self.used = used;
        self.gauge.held.store(used, Ordering::Relaxed);
    }

    /// The layout of a block of `size` caller bytes, if it fits the remaining budget (`extra` is
    /// what the block would add beyond what it already holds, for `realloc`).
    fn admit(&self, size: usize, extra: usize) -> Option<Layout> {
        let total = size.checked_add(HEADER)?;
        if extra > self.limit.saturating_sub(self.used) {
            return None;
        }
        Layout::from_size_align(total, ALIGN).ok()
    }

    /// Allocates a block of `size` caller bytes, zeroed or not.
    fn allocate(&mut self, size: usize, zeroed: bool) -> *mut u8 {
        let Some(layout) = self.admit(size, size.saturating_add(HEADER)) else {
            self.gauge.record_refusal();
            return std::ptr::null_mut();
        };
        // SAFETY: `layout` has a non-zero size (at least `HEADER`) and a valid power-of-two
        // alignment, as `GlobalAlloc::alloc`/`alloc_zeroed` require.
        let base = unsafe {
            if zeroed {
                System.alloc_zeroed(layout)
            } else {
                System.alloc(layout)
            }
        };
        if base.is_null() {
            self.gauge.record_refusal();
            return base;
        }
        self.set_used(self.used + layout.size());
        // SAFETY: `base` is a fresh, `ALIGN`-aligned block of `HEADER + size` bytes, so the
        // header fits at its start (aligned for `usize`) and `base + HEADER` is inside it.
        unsafe {
            base.cast::<usize>().write(size);
            base.add(HEADER)
        }
    }
}

/// The caller's size stored in the header of the block whose caller bytes start at `ptr`.
///
/// # Safety
/// `ptr` must have been returned by a `HeapAllocator` and not freed since.
unsafe fn stored_size(ptr: *mut u8) -> usize {
    // SAFETY: per the contract, `ptr - HEADER` is the start of a live block this module
    // allocated, whose first bytes hold its size, written as an aligned `usize`.
    unsafe { ptr.sub(HEADER).cast::<usize>().read() }
}

/// The layout a block of `size` caller bytes was allocated with.
fn layout_of(size: usize) -> Layout {
    // A block of this size was allocated, so this layout was valid then and still is.
    Layout::from_size_align(size + HEADER, ALIGN).unwrap_or(Layout::new::<[u8; HEADER]>())
}

// SAFETY: `alloc`, `calloc` and `realloc` return null or a pointer to at least the requested
// bytes, 16-byte aligned (so `usize`-aligned); `usable_size` returns the size the caller asked
// for, which that block holds. `dealloc`/`realloc` are only given pointers from this allocator
// (rquickjs's contract), whose headers hold their sizes.
unsafe impl Allocator for HeapAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        self.allocate(size, false)
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        match count.checked_mul(size) {
            Some(total) => self.allocate(total, true),
            None => {
                self.gauge.record_refusal();
                std::ptr::null_mut()
            }
        }
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: rquickjs only frees pointers this allocator returned, once.
        let size = unsafe { stored_size(ptr) };
        let layout = layout_of(size);
        self.set_used(self.used.saturating_sub(layout.size()));
        // SAFETY: `ptr - HEADER` is the start of that block, allocated by `System` with exactly
        // `layout` (same size and alignment).
        unsafe { System.dealloc(ptr.sub(HEADER), layout) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.allocate(new_size, false);
        }
        // SAFETY: rquickjs only reallocates pointers this allocator returned and did not free.
        let old_size = unsafe { stored_size(ptr) };
        let old_layout = layout_of(old_size);
        let Some(new_layout) = self.admit(new_size, new_size.saturating_sub(old_size)) else {
            // Refused: the old block stays valid and unchanged, as `realloc` requires.
            self.gauge.record_refusal();
            return std::ptr::null_mut();
        };
        // SAFETY: `ptr - HEADER` is a live block allocated by `System` with `old_layout`; the
        // new size is non-zero and, rounded up to `ALIGN`, below `isize::MAX` (checked by
        // `Layout::from_size_align` in `admit`).
        let base = unsafe { System.realloc(ptr.sub(HEADER), old_layout, new_layout.size()) };
        if base.is_null() {
            self.gauge.record_refusal();
            return base;
        }
        self.set_used(self.used.saturating_sub(old_layout.size()) + new_layout.size());
        // SAFETY: `base` is the (possibly moved) block of `HEADER + new_size` bytes, aligned as
        // before; its header is rewritten with the new size.
        unsafe {
            base.cast::<usize>().write(new_size);
            base.add(HEADER)
        }
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: QuickJS asks only about live blocks this allocator returned.
        unsafe { stored_size(ptr) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_enforced_and_refusals_and_held_bytes_counted() {
        let gauge = Arc::new(HeapGauge::default());
        let mut heap = HeapAllocator::new(1040, Arc::clone(&gauge));
        let a = heap.alloc(500);
        assert!(!a.is_null());
        // SAFETY: `a` came from `heap` and is live.
        assert_eq!(unsafe { HeapAllocator::usable_size(a) }, 500);
        let b = heap.calloc(10, 50);
        assert!(!b.is_null());
        assert_eq!(gauge.refusals(), 0);
        assert_eq!(gauge.held_bytes(), 1032);
        // 516 + 516 of 1040 bytes are used (16 of each are the header): nothing more fits.
        assert!(heap.alloc(1).is_null());
        assert!(heap.calloc(usize::MAX, 2).is_null());
        assert_eq!(gauge.refusals(), 2);
        // SAFETY: `b` came from `heap` and is live; growing it past the budget is refused and
        // leaves it valid, so it can still be freed.
        unsafe {
            assert!(heap.realloc(b, 600).is_null());
            heap.dealloc(b);
        }
        assert_eq!(gauge.refusals(), 3);
        // SAFETY: `a` is live; after freeing `b` it can grow into the room.
        let a = unsafe { heap.realloc(a, 900) };
        assert!(!a.is_null());
        // SAFETY: the block keeps its first 500 bytes and reports its new size.
        unsafe {
            assert_eq!(HeapAllocator::usable_size(a), 900);
            heap.dealloc(a);
        }
        assert_eq!(heap.used, 0);
        assert_eq!(gauge.held_bytes(), 0);
        assert!(heap.alloc(usize::MAX).is_null());
        assert_eq!(gauge.refusals(), 4);
    }
}
