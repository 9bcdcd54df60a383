//! How launches are timed: batched medians, or the anchors' timer (triton.testing.do_bench) step for step.

use super::BenchArgs;
use cudarc::driver::sys::CUevent_flags;
use flashgen_runtime::{cudarc, Gpu};

/// Per-launch times in ms, sorted, and the one reported (see `BenchArgs::timing`).
pub struct Timed {
    pub sorted: Vec<f64>,
    pub ms: f64,
}

/// Times `launch` the way `a.timing` names.
pub fn time_launches(gpu: &Gpu, a: &BenchArgs, launch: impl FnMut() -> Result<(), String>) -> Result<Timed, String> {
    time_by(gpu, a.timing == "do-bench", a.reps, a.warmup_ms, launch)
}

/// Times `launch` like do_bench, or in `reps` batches (`time_launches` without the bench's arguments).
pub fn time_by(gpu: &Gpu, do_bench: bool, reps: usize, warmup_ms: f64, launch: impl FnMut() -> Result<(), String>) -> Result<Timed, String> {
    let mut sorted = if do_bench { time_like_do_bench(gpu, warmup_ms, launch)? } else { time_batches(gpu, reps, warmup_ms, launch)? };
    sorted.sort_by(f64::total_cmp);
    let ms = if do_bench { sorted.iter().sum::<f64>() / sorted.len() as f64 } else { sorted[sorted.len() / 2] };
    Ok(Timed { sorted, ms })
}

/// Launches, untimed, in groups of 5 until at least `warmup_ms` have passed (at least one group).
fn warm_up(gpu: &Gpu, warmup_ms: f64, launch: &mut impl FnMut() -> Result<(), String>) -> Result<(), String> {
    let warm = std::time::Instant::now();
    loop {
        for _ in 0..5 {
            launch()?;
        }
        gpu.stream.synchronize().map_err(|x| x.to_string())?;
        if warm.elapsed().as_secs_f64() * 1e3 >= warmup_ms {
            return Ok(());
        }
    }
}

/// 5 warm-up launches (and more for `warmup_ms`), then `reps` batches of 10 launches between two CUDA events
/// (reported: the median).
fn time_batches(gpu: &Gpu, reps: usize, warmup_ms: f64, mut launch: impl FnMut() -> Result<(), String>) -> Result<Vec<f64>, String> {
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    warm_up(gpu, warmup_ms, &mut launch)?;
    let mut times = Vec::new();
    for _ in 0..reps {
        let start = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr)?;
        let end = gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr)?;
        start.record(&gpu.stream).map_err(dr)?;
        for _ in 0..10 {
            launch()?;
        }
        end.record(&gpu.stream).map_err(dr)?;
        end.synchronize().map_err(dr)?;
        times.push(start.elapsed_ms(&end).map_err(dr)? as f64 / 10.0);
    }
    Ok(times)
}

/// triton.testing.do_bench (Triton 3.6, the anchors' timer) step for step: one launch; 5 launches each
/// after emptying L2, timed together for an estimate; launches for 25 ms; then launches for 200 ms, each
/// after a 256 MB memset and between its own two events (reported: the mean). The memsets matter on a power-capped
/// chip: they are the low-power gaps between the timed launches. With `warmup_ms`, untimed launches for that
/// long come first.
fn time_like_do_bench(gpu: &Gpu, warmup_ms: f64, mut launch: impl FnMut() -> Result<(), String>) -> Result<Vec<f64>, String> {
    let dr = |x: cudarc::driver::DriverError| x.to_string();
    if warmup_ms > 0.0 {
        warm_up(gpu, warmup_ms, &mut launch)?;
    }
    let st = &gpu.stream;
    let mut cache = st.alloc_zeros::<u32>(256_000_000 / 4).map_err(dr)?;
    let event = || gpu.ctx.new_event(Some(CUevent_flags::CU_EVENT_DEFAULT)).map_err(dr);
    launch()?;
    st.synchronize().map_err(dr)?;
    let (start, end) = (event()?, event()?);
    start.record(st).map_err(dr)?;
    for _ in 0..5 {
        st.memset_zeros(&mut cache).map_err(dr)?;
        launch()?;
    }
    end.record(st).map_err(dr)?;
    end.synchronize().map_err(dr)?;
    let estimate_ms = (start.elapsed_ms(&end).map_err(dr)? as f64 / 5.0).max(1e-6);
    let (warmup, repeat) = (((25.0 / estimate_ms) as usize).max(1), ((200.0 / estimate_ms) as usize).max(1));
    for _ in 0..warmup {
        launch()?;
    }
    let mut events = Vec::with_capacity(repeat);
    for _ in 0..repeat {
        st.memset_zeros(&mut cache).map_err(dr)?;
        let (start, end) = (event()?, event()?);
        start.record(st).map_err(dr)?;
        launch()?;
        end.record(st).map_err(dr)?;
        events.push((start, end));
    }
    st.synchronize().map_err(dr)?;
    events.iter().map(|(s, e)| s.elapsed_ms(e).map(|t| t as f64)).collect::<Result<Vec<_>, _>>().map_err(dr)
}

