//! Times the `chacha20-blake3` crate and pieces of cb3's engine without
//! Python, so that the measuring tools can report cb3 / raw-Rust ratios in
//! the same run as their Python-level measurements.
//!
//! A co-process: each line of standard input is a request
//! `MODE MESSAGE_LEN ITERATIONS`, answered by one line with the elapsed wall
//! time of `ITERATIONS` calls in nanoseconds. A malformed request is answered
//! with a line starting `error:` and ends the process with status 2.
//!
//! Modes: `encrypt` (the crate's `encrypt`, allocating `ciphertext || tag`),
//! `encrypt_in_place` (the crate's `encrypt_in_place_detached`), `decrypt`
//! (the crate's `decrypt`), `seal` (cb3's engine `aead::seal` into a
//! preallocated buffer), `parts` (cb3's ChaCha20 then keyed BLAKE3 of the
//! result: the two primitives `seal` fuses), `seal_xor` (the XOR of `seal`'s
//! pieces alone) and `seal_xor_copying` (`seal_xor` with the private copy
//! `seal` makes of each piece).

use std::hint::black_box;
use std::io::{BufRead, Write};
use std::time::Instant;

use cb3_core::aead;
use cb3_core::chacha20::{Keystream, Source};
use chacha20_blake3::ChaCha20Blake3;

/// The longest message timed (1 GiB).
const MAX_MESSAGE_LEN: usize = 1 << 30;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Encrypt,
    EncryptInPlace,
    Decrypt,
    Seal,
    Parts,
    SealXor,
    SealXorCopying,
}

fn parse(line: &str) -> Result<(Mode, usize, u64), String> {
    let words: Vec<&str> = line.split_whitespace().collect();
    let [mode, len, iterations] = words[..] else {
        return Err(format!("expected MODE MESSAGE_LEN ITERATIONS, got {line:?}"));
    };
    let mode = match mode {
        "encrypt" => Mode::Encrypt,
        "encrypt_in_place" => Mode::EncryptInPlace,
        "decrypt" => Mode::Decrypt,
        "seal" => Mode::Seal,
        "parts" => Mode::Parts,
        "seal_xor" => Mode::SealXor,
        "seal_xor_copying" => Mode::SealXorCopying,
        other => return Err(format!("unknown mode {other:?}")),
    };
    let len: usize = len.parse().map_err(|_| format!("MESSAGE_LEN {len:?} is not a size"))?;
    let iterations: u64 = iterations.parse().map_err(|_| format!("ITERATIONS {iterations:?} is not a count"))?;
    if len > MAX_MESSAGE_LEN || iterations == 0 {
        return Err(format!("MESSAGE_LEN must be at most {MAX_MESSAGE_LEN} and ITERATIONS at least 1"));
    }
    Ok((mode, len, iterations))
}

fn time(mode: Mode, len: usize, iterations: u64) -> Result<u128, String> {
    let fail = |e: cb3_core::Error| format!("{e:?}");
    let key = [0x42; 32];
    let nonce = [0x24; 24];
    let cipher = ChaCha20Blake3::new(key);
    let mut buffer = vec![0x5a_u8; len];
    let sealed = if mode == Mode::Decrypt { cipher.encrypt(&nonce, &buffer, b"") } else { Vec::new() };
    // Written before timing: the first timed call does not fault its pages in.
    let mut out = vec![0xa5_u8; len];
    let mut chacha = Keystream::<chacha20::R20>::new(&key, &nonce[..8], 0).map_err(fail)?;
    let start = Instant::now();
    for _ in 0..iterations {
        match mode {
            Mode::Encrypt => drop(black_box(cipher.encrypt(&nonce, black_box(&buffer), b""))),
            Mode::EncryptInPlace => {
                black_box(cipher.encrypt_in_place_detached(&nonce, black_box(&mut buffer), b""));
            }
            Mode::Decrypt => {
                let plaintext = cipher.decrypt(&nonce, black_box(&sealed), b"").map_err(|_| "decryption failed")?;
                drop(black_box(plaintext));
            }
            Mode::Seal => {
                let source = Source::Separate(black_box(&buffer));
                black_box(aead::seal(&key, &nonce, b"", source, black_box(&mut out), None)).map_err(fail)?;
            }
            Mode::Parts => {
                chacha.apply(Source::Separate(black_box(&buffer)), black_box(&mut out)).map_err(fail)?;
                black_box(blake3::keyed_hash(&key, black_box(&out)));
            }
            Mode::SealXor | Mode::SealXorCopying => {
                let copying = mode == Mode::SealXorCopying;
                aead::seal_xor_pass(&key, &nonce, black_box(&buffer), black_box(&mut out), copying).map_err(fail)?;
            }
        }
    }
    Ok(start.elapsed().as_nanos())
}

fn main() {
    let stdout = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let mut out = stdout.lock();
        match parse(&line).and_then(|(mode, len, iterations)| time(mode, len, iterations)) {
            Ok(ns) => {
                let _ = writeln!(out, "{ns}");
                let _ = out.flush();
            }
            Err(message) => {
                let _ = writeln!(out, "error: {message}");
                let _ = out.flush();
                std::process::exit(2);
            }
        }
    }
}
