//! The worker protocol's frame decoder, on bytes a worker process (untrusted) or its host writes.
//! The first byte picks the direction and the reader's bound; the rest is either a raw stream
//! (odd choices) or frame bodies separated by NUL bytes, each given its true length header, so
//! that mutated JSON still reaches the parser. Reading must end with messages and a refusal,
//! never a panic: a header over the bound is refused without reading on, and every message the
//! host accepts writes and reads back as the same message.
#![no_main]

use codemode_sandbox::fuzzing::{FrameRefusal, read_host_frames, read_worker_frames};
use libfuzzer_sys::fuzz_target;

/// Frame bounds the readers are given: tiny, a hello's, and a step's.
const LIMITS: [usize; 3] = [16, 4096, 1 << 20];

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let limit = LIMITS[usize::from(mode >> 2) % LIMITS.len()];
    let stream: Vec<u8> = if mode & 2 == 0 {
        rest.split(|&byte| byte == 0)
            .flat_map(|body| {
                let length = u32::try_from(body.len()).unwrap_or(u32::MAX);
                length.to_le_bytes().into_iter().chain(body.iter().copied())
            })
            .collect()
    } else {
        rest.to_vec()
    };
    let refusal = if mode & 1 == 0 {
        match read_worker_frames(&stream, limit) {
            Ok((_messages, refusal)) => refusal,
            Err(broken) => panic!("{broken}"),
        }
    } else {
        read_host_frames(&stream, limit).1
    };
    if let FrameRefusal::TooLong { bytes, limit: said } = refusal {
        assert!(
            bytes > limit && said == limit,
            "{bytes} refused against {said}"
        );
    }
});
