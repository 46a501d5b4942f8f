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
//! The allocator keeps its live blocks in a list, and frees every one of them when it is dropped:
//! the runtime is then torn down in bulk (codemode-quickjs-sys patch 15). Dropping a VM runs
//! only the finalizers that reach outside the heap, the host's among them, then this drop
//! returns the heap to `malloc` block by block, a few hundred calls for a trivial run, where
//! freeing each object, shape and atom cost a fifth of a fresh VM's work.
//!
//! The second module allowed `unsafe` (after bytecode.rs): rquickjs's `Allocator` is an unsafe
//! trait over raw pointers. Each block is `HEADER` bytes of bookkeeping (the caller's size and
//! the block's links in the list) followed by the caller's bytes; every `unsafe` block below
//! says why it is sound.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use rquickjs::allocator::Allocator;

/// Bytes before each block: its size, then the previous and the next block in the list (their
/// starts, null at either end). 32 keeps every block 16-byte aligned, like `malloc`'s.
const HEADER: usize = 32;
/// Where in a header the caller's size, and the block's links, are.
const SIZE_AT: usize = 0;
const PREV_AT: usize = 8;
const NEXT_AT: usize = 16;
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

/// The allocator of one VM: at most `limit` bytes (headers included) live at once. Frees every
/// block still live when dropped.
pub(crate) struct HeapAllocator {
    limit: usize,
    used: usize,
    gauge: Arc<HeapGauge>,
    /// The start of the newest live block (its header), null when none is live.
    newest: *mut u8,
}

// SAFETY: the blocks in the list belong to this allocator alone (QuickJS, its only user, reaches
// them through it and runs on one thread at a time), so moving the allocator to another thread
// moves them with it.
unsafe impl Send for HeapAllocator {}

impl HeapAllocator {
    pub(crate) fn new(limit: usize, gauge: Arc<HeapGauge>) -> Self {
        Self {
            limit,
            used: 0,
            gauge,
            newest: std::ptr::null_mut(),
        }
    }

    /// Puts the fresh block starting at `base` first in the list.
    ///
    /// # Safety
    /// `base` must start a block of this allocator, at least `HEADER` bytes, not in the list.
    unsafe fn link(&mut self, base: *mut u8) {
        let next = self.newest;
        // SAFETY: `base` starts a block of this allocator, whose header is `usize`-aligned and
        // holds the links at `PREV_AT` and `NEXT_AT`; `next` is null or the newest live block.
        unsafe {
            write_link(base, PREV_AT, std::ptr::null_mut());
            write_link(base, NEXT_AT, next);
            self.join(std::ptr::null_mut(), next, base, base);
        }
    }

    /// Takes the block starting at `base` out of the list.
    ///
    /// # Safety
    /// `base` must start a live block of this allocator, in the list.
    unsafe fn unlink(&mut self, base: *mut u8) {
        // SAFETY: `base` starts a block in the list, and its links are null or blocks in it.
        unsafe {
            let (prev, next) = (read_link(base, PREV_AT), read_link(base, NEXT_AT));
            self.join(prev, next, next, prev);
        }
    }

    /// Points the neighbours of a block moved by `realloc` to `base` (whose header it copied,
    /// links included: `prev` and `next`) at its new start.
    ///
    /// # Safety
    /// `prev` and `next` must be null or start live blocks of this allocator.
    unsafe fn relink(&mut self, base: *mut u8, prev: *mut u8, next: *mut u8) {
        // SAFETY: per the contract.
        unsafe { self.join(prev, next, base, base) }
    }

    /// Makes `after_prev` what follows `prev` (the newest block, when `prev` is null) and
    /// `before_next` what precedes `next` (when `next` is not null).
    ///
    /// # Safety
    /// `prev` and `next` must be null or start live blocks of this allocator.
    unsafe fn join(
        &mut self,
        prev: *mut u8,
        next: *mut u8,
        after_prev: *mut u8,
        before_next: *mut u8,
    ) {
        // SAFETY: per the contract, non-null `prev` and `next` start live blocks.
        unsafe {
            if prev.is_null() {
                self.newest = after_prev;
            } else {
                write_link(prev, NEXT_AT, after_prev);
            }
            if !next.is_null() {
                write_link(next, PREV_AT, before_next);
            }
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
            base.add(SIZE_AT).cast::<usize>().write(size);
            self.link(base);
            base.add(HEADER)
        }
    }
}

impl Drop for HeapAllocator {
    /// Frees every block still live: after a runtime torn down in bulk, its whole heap.
    fn drop(&mut self) {
        let mut base = std::mem::replace(&mut self.newest, std::ptr::null_mut());
        while !base.is_null() {
            // SAFETY: `base` starts a live block of this allocator (the list holds exactly
            // those), allocated by `System` with the layout of the size in its header; its next
            // link is read before it is freed.
            unsafe {
                let next = read_link(base, NEXT_AT);
                let size = base.add(SIZE_AT).cast::<usize>().read();
                System.dealloc(base, layout_of(size));
                base = next;
            }
        }
        self.set_used(0);
    }
}

/// The link at `at` (`PREV_AT` or `NEXT_AT`) in the header of the block starting at `base`.
///
/// # Safety
/// `base` must start a live block of a `HeapAllocator`.
unsafe fn read_link(base: *mut u8, at: usize) -> *mut u8 {
    // SAFETY: the header is `HEADER` bytes at the block's `usize`-aligned start.
    unsafe { base.add(at).cast::<*mut u8>().read() }
}

/// Sets the link at `at` in the header of the block starting at `base`.
///
/// # Safety
/// As [`read_link`].
unsafe fn write_link(base: *mut u8, at: usize, link: *mut u8) {
    // SAFETY: as in `read_link`.
    unsafe { base.add(at).cast::<*mut u8>().write(link) }
}

/// The caller's size stored in the header of the block whose caller bytes start at `ptr`.
///
/// # Safety
/// `ptr` must have been returned by a `HeapAllocator` and not freed since.
unsafe fn stored_size(ptr: *mut u8) -> usize {
    // SAFETY: per the contract, `ptr - HEADER` is the start of a live block this module
    // allocated, whose header holds its size at `SIZE_AT`, written as an aligned `usize`.
    unsafe { ptr.sub(HEADER).add(SIZE_AT).cast::<usize>().read() }
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
        // SAFETY: `ptr - HEADER` is the start of that block, in the list (so are its links,
        // when not null), allocated by `System` with exactly `layout` (same size and alignment).
        unsafe {
            let base = ptr.sub(HEADER);
            self.unlink(base);
            System.dealloc(base, layout);
        }
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
        // before, whose header `realloc` copied: its links are those of the block in the list,
        // and its neighbours are pointed at its new start. Its size is rewritten.
        unsafe {
            self.relink(base, read_link(base, PREV_AT), read_link(base, NEXT_AT));
            base.add(SIZE_AT).cast::<usize>().write(new_size);
            base.add(HEADER)
        }
    }

    fn frees_all_when_dropped(&self) -> bool {
        true
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
        let mut heap = HeapAllocator::new(1072, Arc::clone(&gauge));
        let a = heap.alloc(500);
        assert!(!a.is_null());
        // SAFETY: `a` came from `heap` and is live.
        assert_eq!(unsafe { HeapAllocator::usable_size(a) }, 500);
        let b = heap.calloc(10, 50);
        assert!(!b.is_null());
        assert_eq!(gauge.refusals(), 0);
        assert_eq!(gauge.held_bytes(), 1064);
        // 532 + 532 of 1072 bytes are used (32 of each are the header): nothing more fits.
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

    /// Blocks freed from the middle, the ends, or moved by `realloc` leave the list whole, and
    /// dropping the allocator frees every block still live (the bulk teardown, patch 15).
    #[test]
    fn dropping_the_allocator_frees_every_live_block() {
        let gauge = Arc::new(HeapGauge::default());
        let mut heap = HeapAllocator::new(1 << 20, Arc::clone(&gauge));
        let mut live: Vec<*mut u8> = (0..8).map(|i| heap.alloc(16 + i * 100)).collect();
        assert!(live.iter().all(|block| !block.is_null()));
        // SAFETY: every pointer came from `heap` and is freed or reallocated once; a block is
        // written through only within its size.
        unsafe {
            for (i, block) in live.iter().enumerate() {
                block.write(u8::try_from(i).unwrap());
            }
            // The newest, the oldest and one in the middle go.
            heap.dealloc(live.remove(7));
            heap.dealloc(live.remove(0));
            heap.dealloc(live.remove(3));
            // Growing far past the block's size moves it (its neighbours follow it).
            live[1] = heap.realloc(live[1], 64 * 1024);
            assert!(!live[1].is_null());
            live.push(heap.calloc(4, 8));
            let mut listed = 0;
            let mut base = heap.newest;
            let mut prev = std::ptr::null_mut();
            while !base.is_null() {
                assert_eq!(read_link(base, PREV_AT), prev);
                assert!(live.contains(&base.add(HEADER)));
                listed += 1;
                prev = base;
                base = read_link(base, NEXT_AT);
            }
            assert_eq!(listed, live.len());
            assert_eq!(*live[1], 2, "the moved block kept its bytes");
        }
        assert!(gauge.held_bytes() > 64 * 1024);
        drop(heap);
        assert_eq!(gauge.held_bytes(), 0);
    }

    /// What a finalizer frees in the bulk teardown stays allocated, small blocks carved from an
    /// arena included: an allocation made after it gets another block, so a finalizer never
    /// reads memory that a later one overwrote (patch 15).
    #[test]
    fn a_block_freed_in_the_bulk_teardown_is_never_handed_out_again() {
        use std::ffi::c_void;
        use std::sync::Mutex;

        use rquickjs::{Context, Runtime, qjs};

        /// The block the finalizer freed and the one it was given next.
        static SEEN: Mutex<Option<(usize, usize)>> = Mutex::new(None);
        unsafe extern "C" fn free_then_allocate(rt: *mut qjs::JSRuntime, block: *mut c_void) {
            // SAFETY: `block` is a live block of this runtime, freed once; the new block is
            // freed with the heap.
            let again = unsafe {
                qjs::js_free_rt(rt, block);
                qjs::js_malloc_rt(rt, 64)
            };
            *SEEN.lock().unwrap() = Some((block as usize, again as usize));
        }

        let gauge = Arc::new(HeapGauge::default());
        let runtime = Runtime::new_with_alloc(HeapAllocator::new(1 << 24, Arc::clone(&gauge)))
            .expect("runtime");
        let context = Context::full(&runtime).expect("context");
        // SAFETY: the context is live; the block and the finalizer belong to its runtime.
        unsafe {
            let rt = qjs::JS_GetRuntime(context.as_raw().as_ptr());
            let block = qjs::js_malloc_rt(rt, 64);
            assert!(!block.is_null());
            assert_eq!(
                qjs::JS_AddRuntimeFinalizer(rt, Some(free_then_allocate), block),
                0
            );
        }
        drop(context);
        drop(runtime);
        let (freed, again) = SEEN.lock().unwrap().expect("the finalizer ran");
        assert_ne!(again, 0);
        assert_ne!(
            freed, again,
            "a block freed in the teardown was handed out again"
        );
        assert_eq!(gauge.held_bytes(), 0);
    }
}
