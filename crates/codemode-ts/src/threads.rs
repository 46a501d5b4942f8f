//! Where transforms run: a few long-lived threads with big stacks,
//! fed through a bounded queue.
//!
//! swc recurses over the syntax tree, so it needs far more stack than an
//! async worker (2 MiB) has; starting a thread per cell costs a `clone` and a
//! 64 MiB mapping each time. So a process has one [`TransformThreads`] (started
//! lazily by the first transform), whose threads, named `codemode-ts-N`, live
//! as long as the process. Each job catches its own panic and reports it as a
//! [`TsError::Internal`], so a panic in swc never kills a transform thread.
//!
//! The queue holds at most `capacity` jobs besides the ones running. A
//! synchronous caller waits (blocking its thread) for a free slot; an async
//! caller's future stays pending until one is free. Nothing is dropped.

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::task::{Context, Poll, Waker};

use crate::TsError;

/// Work for a transform thread. It never panics (see [`job`]).
type Job = Box<dyn FnOnce() + Send + 'static>;

/// The transform threads of the process.
pub(crate) fn transform_threads() -> &'static Arc<TransformThreads> {
    static POOL: OnceLock<Arc<TransformThreads>> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = thread_count();
        TransformThreads::new(
            "codemode-ts",
            threads,
            threads * crate::TRANSFORM_QUEUE_SLOTS_PER_THREAD,
            crate::DEFAULT_STACK_SIZE,
        )
    })
}

/// Transform threads of the process: the number of cores, at least two.
pub(crate) fn thread_count() -> usize {
    std::thread::available_parallelism()
        .map_or(2, std::num::NonZeroUsize::get)
        .max(2)
}

/// A fixed number of long-lived threads and a bounded queue.
pub(crate) struct TransformThreads {
    /// Thread names are `{name}-{index}`.
    name: &'static str,
    threads: usize,
    capacity: usize,
    stack_size: usize,
    queue: Mutex<Queue>,
    /// Signalled when a job is queued.
    job_queued: Condvar,
    /// Signalled when a queued job is taken (a slot is free).
    slot_freed: Condvar,
    /// Threads started so far (never more than `threads`).
    started: AtomicUsize,
}

struct Queue {
    jobs: VecDeque<Job>,
    /// Threads waiting for a job.
    idle: usize,
    /// Threads started.
    started: usize,
    /// Async submitters waiting for a free slot.
    waiting: Vec<Waker>,
}

impl TransformThreads {
    pub(crate) fn new(
        name: &'static str,
        threads: usize,
        capacity: usize,
        stack_size: usize,
    ) -> Arc<TransformThreads> {
        Arc::new(TransformThreads {
            name,
            threads: threads.max(1),
            capacity: capacity.max(1),
            stack_size,
            queue: Mutex::new(Queue {
                jobs: VecDeque::new(),
                idle: 0,
                started: 0,
                waiting: Vec::new(),
            }),
            job_queued: Condvar::new(),
            slot_freed: Condvar::new(),
            started: AtomicUsize::new(0),
        })
    }

    /// Threads started so far.
    pub(crate) fn threads_started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Run `work` on a transform thread; block this thread until it is done
    /// (first, if the queue is full, until there is a free slot).
    pub(crate) fn run_blocking<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce() -> Result<T, TsError> + Send + 'static,
    ) -> Result<T, TsError> {
        let (job, reply) = job(work);
        {
            let mut queue = self.lock();
            while queue.jobs.len() >= self.capacity {
                queue = self
                    .slot_freed
                    .wait(queue)
                    .unwrap_or_else(PoisonError::into_inner);
            }
            self.enqueue(&mut queue, job)?;
        }
        reply.wait()
    }

    /// Run `work` on a transform thread without blocking the caller: the future
    /// is pending while the queue is full and while the job runs.
    pub(crate) async fn run_async<T: Send + 'static>(
        self: &Arc<Self>,
        work: impl FnOnce() -> Result<T, TsError> + Send + 'static,
    ) -> Result<T, TsError> {
        let (job, reply) = job(work);
        Submission {
            pool: Arc::clone(self),
            job: Some(job),
        }
        .await?;
        ReplyFuture { reply }.await
    }

    /// Queue `job`, starting one more thread if every started one is busy.
    fn enqueue(self: &Arc<Self>, queue: &mut Queue, job: Job) -> Result<(), TsError> {
        if queue.jobs.len() >= queue.idle && queue.started < self.threads {
            match self.start_thread(queue.started) {
                Ok(()) => queue.started += 1,
                // The started threads will get to the job.
                Err(_) if queue.started > 0 => {}
                Err(error) => {
                    return Err(TsError::Internal {
                        message: format!("cannot start a transform thread: {error}"),
                    });
                }
            }
        }
        queue.jobs.push_back(job);
        self.job_queued.notify_one();
        Ok(())
    }

    fn start_thread(self: &Arc<Self>, index: usize) -> std::io::Result<()> {
        let pool = Arc::clone(self);
        std::thread::Builder::new()
            .name(format!("{}-{index}", self.name))
            .stack_size(self.stack_size)
            .spawn(move || pool.work())?;
        self.started.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    /// A transform thread's life: take a job, run it, forever.
    fn work(&self) {
        loop {
            let (job, waiting) = {
                let mut queue = self.lock();
                let job = loop {
                    if let Some(job) = queue.jobs.pop_front() {
                        break job;
                    }
                    queue.idle += 1;
                    queue = self
                        .job_queued
                        .wait(queue)
                        .unwrap_or_else(PoisonError::into_inner);
                    queue.idle -= 1;
                };
                (job, std::mem::take(&mut queue.waiting))
            };
            // A slot is free: every waiting submitter tries again (one wins,
            // the others wait again), so no wake-up is lost.
            self.slot_freed.notify_all();
            waiting.into_iter().for_each(Waker::wake);
            // `job` catches its own panics; this is a second net.
            let _ = catch_unwind(AssertUnwindSafe(job));
        }
    }
}

/// Name of the one-off threads of [`run_on_own_thread_blocking`] and
/// [`run_on_own_thread`] (deliberately not `codemode-ts-N`: they are not
/// transform threads).
const OWN_THREAD_NAME: &str = "ts-large-stack";

/// Run `work` on a new thread of `stack_size` bytes, for a caller that asked
/// for more stack than the transform threads have; block until it is done.
pub(crate) fn run_on_own_thread_blocking<T: Send + 'static>(
    stack_size: usize,
    work: impl FnOnce() -> Result<T, TsError> + Send + 'static,
) -> Result<T, TsError> {
    let (job, reply) = job(work);
    spawn_own_thread(stack_size, job)?;
    reply.wait()
}

/// [`run_on_own_thread_blocking`] without blocking the caller.
pub(crate) async fn run_on_own_thread<T: Send + 'static>(
    stack_size: usize,
    work: impl FnOnce() -> Result<T, TsError> + Send + 'static,
) -> Result<T, TsError> {
    let (job, reply) = job(work);
    spawn_own_thread(stack_size, job)?;
    ReplyFuture { reply }.await
}

fn spawn_own_thread(stack_size: usize, job: Job) -> Result<(), TsError> {
    std::thread::Builder::new()
        .name(OWN_THREAD_NAME.to_owned())
        .stack_size(stack_size)
        .spawn(job)
        .map(drop)
        .map_err(|error| TsError::Internal {
            message: format!("cannot start the transform thread: {error}"),
        })
}

/// Wrap `work` into a job that always delivers a reply: its result, or an
/// internal error if it panicked.
fn job<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, TsError> + Send + 'static,
) -> (Job, Arc<Reply<T>>) {
    let reply = Arc::new(Reply {
        state: Mutex::new(ReplyState {
            value: None,
            waker: None,
        }),
        delivered: Condvar::new(),
    });
    let mut sender = ReplySender {
        reply: Arc::clone(&reply),
        sent: false,
    };
    let job: Job = Box::new(move || {
        let result = catch_unwind(AssertUnwindSafe(work)).unwrap_or_else(|panic| {
            let reason = panic
                .downcast_ref::<&str>()
                .map(|reason| (*reason).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown reason".to_owned());
            Err(TsError::Internal {
                message: format!("the transformer panicked: {reason}"),
            })
        });
        sender.deliver(result);
    });
    (job, reply)
}

/// Where a job's result goes.
struct Reply<T> {
    state: Mutex<ReplyState<T>>,
    delivered: Condvar,
}

struct ReplyState<T> {
    value: Option<Result<T, TsError>>,
    waker: Option<Waker>,
}

impl<T> Reply<T> {
    fn lock(&self) -> MutexGuard<'_, ReplyState<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Block until the result is delivered.
    fn wait(&self) -> Result<T, TsError> {
        let mut state = self.lock();
        loop {
            if let Some(value) = state.value.take() {
                return value;
            }
            state = self
                .delivered
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

/// Awaiting a [`Reply`].
struct ReplyFuture<T> {
    reply: Arc<Reply<T>>,
}

impl<T> Future for ReplyFuture<T> {
    type Output = Result<T, TsError>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let mut state = self.reply.lock();
        if let Some(value) = state.value.take() {
            return Poll::Ready(value);
        }
        match &mut state.waker {
            Some(waker) if waker.will_wake(context.waker()) => {}
            slot => *slot = Some(context.waker().clone()),
        }
        Poll::Pending
    }
}

/// The job's end of a [`Reply`]. Dropping it undelivered (the job never ran)
/// delivers an internal error, so no caller waits forever.
struct ReplySender<T> {
    reply: Arc<Reply<T>>,
    sent: bool,
}

impl<T> ReplySender<T> {
    fn deliver(&mut self, value: Result<T, TsError>) {
        let waker = {
            let mut state = self.reply.lock();
            state.value = Some(value);
            state.waker.take()
        };
        self.sent = true;
        self.reply.delivered.notify_all();
        if let Some(waker) = waker {
            waker.wake();
        }
    }
}

impl<T> Drop for ReplySender<T> {
    fn drop(&mut self) {
        if !self.sent {
            self.deliver(Err(TsError::Internal {
                message: "the transform job was dropped before it ran".to_owned(),
            }));
        }
    }
}

/// Waiting for a free slot in the queue, then queueing the job.
struct Submission {
    pool: Arc<TransformThreads>,
    job: Option<Job>,
}

impl Future for Submission {
    type Output = Result<(), TsError>;

    fn poll(self: Pin<&mut Self>, context: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let Some(job) = this.job.take() else {
            return Poll::Ready(Ok(()));
        };
        let mut queue = this.pool.lock();
        if queue.jobs.len() < this.pool.capacity {
            return Poll::Ready(this.pool.enqueue(&mut queue, job));
        }
        if !queue
            .waiting
            .iter()
            .any(|waiting| waiting.will_wake(context.waker()))
        {
            queue.waiting.push(context.waker().clone());
        }
        this.job = Some(job);
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::pin;
    use std::sync::mpsc;
    use std::sync::{Arc, Mutex, PoisonError};
    use std::task::{Context, Poll, Wake, Waker};

    use super::TransformThreads;
    use crate::TsError;

    /// A waker that counts its wake-ups.
    struct CountingWaker(Mutex<usize>);

    impl Wake for CountingWaker {
        fn wake(self: Arc<Self>) {
            *self.0.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        }
    }

    fn small_pool() -> Arc<TransformThreads> {
        TransformThreads::new("codemode-ts-test", 1, 1, 1024 * 1024)
    }

    #[test]
    fn a_panicking_job_is_an_error_and_the_thread_lives_on() {
        let pool = small_pool();
        let error = pool
            .run_blocking(|| -> Result<(), TsError> { panic!("swc broke") })
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "typescript transform failed: the transformer panicked: swc broke"
        );
        assert_eq!(pool.run_blocking(|| Ok(7)), Ok(7));
        assert_eq!(pool.threads_started(), 1);
    }

    #[test]
    fn a_full_queue_makes_the_async_caller_wait_without_blocking_it() {
        let pool = small_pool();
        // Occupy the one thread until `release` is sent ...
        let (release, released) = mpsc::channel::<()>();
        let (running, is_running) = mpsc::channel::<()>();
        let blocker = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                pool.run_blocking(move || {
                    let _ = running.send(());
                    let _ = released.recv();
                    Ok(1)
                })
            })
        };
        assert_eq!(is_running.recv(), Ok(()));
        // ... and fill the one queue slot.
        let queued = {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || pool.run_blocking(|| Ok(2)))
        };
        while pool.lock().jobs.is_empty() {
            std::thread::yield_now();
        }
        let waker = Arc::new(CountingWaker(Mutex::new(0)));
        let task_waker = Waker::from(Arc::clone(&waker));
        let mut context = Context::from_waker(&task_waker);
        let mut waiting = pin!(pool.run_async(|| Ok(3)));
        // The queue is full: the future is pending, the thread not blocked.
        assert!(waiting.as_mut().poll(&mut context).is_pending());
        assert_eq!(release.send(()), Ok(()));
        assert_eq!(blocker.join().ok(), Some(Ok(1)));
        assert_eq!(queued.join().ok(), Some(Ok(2)));
        // The freed slot woke the future; it now queues and gets its result.
        assert!(*waker.0.lock().unwrap_or_else(PoisonError::into_inner) >= 1);
        let result = loop {
            if let Poll::Ready(result) = waiting.as_mut().poll(&mut context) {
                break result;
            }
            std::thread::yield_now();
        };
        assert_eq!(result, Ok(3));
        assert_eq!(pool.threads_started(), 1);
    }
}
