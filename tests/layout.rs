//! Argument rules of the launcher, checked on the CPU: each rejected layout names the tensor and the rule.

use flashgen_runtime::Layout;

#[test]
fn contiguous_and_bshd_layouts_are_accepted() {
    let c = Layout::contiguous(2, 3, 100, 64);
    assert_eq!(c.extent(), 2 * 3 * 100 * 64);
    c.check("Q", c.extent()).unwrap();
    let b = Layout::bshd(2, 3, 100, 64);
    assert_eq!(b.offset(1, 2, 5, 7), 100 * 3 * 64 + 2 * 64 + 5 * 3 * 64 + 7);
    b.check("K", b.extent()).unwrap();
}

#[test]
fn each_rule_names_tensor_and_fix() {
    let c = Layout::contiguous(1, 2, 16, 64);
    let cases = [
        (Layout { strides: [2048, 1024, 64, 2], ..c }, "head-dim stride is 2"),
        (Layout { strides: [2048, 1024, 60, 1], ..c }, "stride 60 of dim 2 is not a multiple of 8"),
        (Layout { shape: [1, 2, 0, 64], ..c }, "zero dimension"),
    ];
    for (l, phrase) in cases {
        let e = l.check("V", 1 << 20).unwrap_err().to_string();
        assert!(e.starts_with("tensor V:") && e.contains(phrase), "{e}");
    }
    let e = c.check("O", c.extent() - 1).unwrap_err().to_string();
    assert!(e.contains("reaches element 2047 but the buffer holds 2047"), "{e}");
}

/// Strides whose reach does not fit a usize are refused, not wrapped into a small extent that the buffer
/// check would pass (5 batches 2^62 elements apart: 4 · 2^62 wrapped to 0, an extent of 64, before).
#[test]
fn strides_past_the_address_space_are_refused() {
    let huge = Layout { shape: [5, 1, 1, 64], strides: [1 << 62, 64, 64, 1] };
    assert_eq!(huge.extent(), usize::MAX);
    let e = huge.check("K", 1 << 40).unwrap_err().to_string();
    assert!(e.starts_with("tensor K:") && e.contains("past the address space"), "{e}");
}
