//! The update path allocates nothing: alarms included (a detector's name is
//! a static string, not a `String` per alarm).
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use ratchet_drift::{Cusum, Detector, Ewma, EwmaLimits, PageHinkley};

/// Counts allocations per thread: the binary's other tests run on other
/// threads at the same time, and only this thread's count is read.
struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

// SAFETY: every call is forwarded unchanged to the system allocator; the
// counter is a const-initialized thread-local cell, which allocates
// nothing (and `try_with` does nothing while the thread is torn down).
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|c| c.set(c.get() + 1));
        // SAFETY: the caller's contract is passed on as is.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(d: &mut dyn Detector, xs: &[f64]) -> (usize, usize) {
    let mut alarms = 0;
    let before = allocations();
    for &x in xs {
        if d.update(x).expect("finite").is_some() {
            alarms += 1;
            d.reset();
        }
    }
    (allocations() - before, alarms)
}

#[test]
fn updates_and_alarms_allocate_nothing() {
    // A deterministic stream that swings enough to alarm often.
    let xs: Vec<f64> = (0..20_000)
        .map(|i| {
            ((i * 7919) % 1000) as f64 / 250.0 - 2.0 + if (i / 500) % 2 == 0 { 0.0 } else { 1.5 }
        })
        .collect();
    let detectors: Vec<Box<dyn Detector>> = vec![
        Box::new(Cusum::new(0.0, 1.0, 0.5, 4.0).expect("valid")),
        Box::new(Ewma::new(0.0, 1.0, 0.1, 2.8, EwmaLimits::TimeVarying).expect("valid")),
        Box::new(PageHinkley::new(0.05, 10.0).expect("valid")),
    ];
    for mut d in detectors {
        let (allocated, alarms) = allocations_during(d.as_mut(), &xs);
        assert!(alarms > 0, "the stream must exercise the alarm path");
        assert_eq!(allocated, 0, "{alarms} alarms cost {allocated} allocations");
    }
}
