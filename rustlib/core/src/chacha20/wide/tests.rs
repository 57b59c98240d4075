//! Each kernel this CPU runs against the `chacha20` crate's cores and
//! RFC 8439.

use super::*;
use chacha20::cipher::inout::InOutBuf;
use chacha20::cipher::{KeyIvInit, StreamCipherCore};
use chacha20::variants::Ietf;
use chacha20::{ChaChaCore, Rounds, R12, R20, R8};

#[cfg(target_arch = "x86_64")]
use super::rounds::quarter_round;
use crate::chacha20::blocks::tests::random;

/// The crate's bytes: `data` XOR its keystream from block `counter`.
fn crate_xor<R: Rounds>(key: &[u8; 32], nonce: Nonce<'_>, counter: u64, data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    let (blocks, _) = chacha20::cipher::array::Array::slice_as_chunks_mut(&mut out);
    match nonce {
        Nonce::Djb(nonce) => {
            assert_eq!(R::COUNT, 10, "the crate's DJB core is ChaCha20 only");
            let mut core = chacha20::ChaCha20LegacyCore::new(key.into(), nonce.into());
            core.set_block_pos(counter);
            core.apply_keystream_blocks(blocks);
        }
        Nonce::Ietf(nonce) => {
            let mut core = ChaChaCore::<R, Ietf>::new(key.into(), nonce.into());
            core.set_block_pos(counter as u32);
            core.apply_keystream_blocks_inout(InOutBuf::from(blocks));
        }
    }
    out
}

/// Every kernel this CPU can run: on an AVX-512 machine both, so that
/// the AVX2 one is tested natively there too.
fn kernels_here() -> Vec<Kernel> {
    let mut kernels = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if crate::cpu::avx2() {
            kernels.push(Kernel::Avx2);
        }
        if std::arch::is_x86_feature_detected!("avx512f") {
            kernels.push(Kernel::Avx512);
        }
    }
    kernels
}

/// Offsets of the input, the output and the copy from a 64-byte line.
#[derive(Clone, Copy, Debug)]
struct Offsets {
    data: usize,
    out: usize,
    copy: usize,
}

/// `len` bytes of `backing` (64 more than `len` + 64) from `offset` past a line.
fn at_line_offset(backing: &mut [u8], offset: usize, len: usize) -> &mut [u8] {
    let start = (backing.as_ptr() as usize).wrapping_neg() % 64 + offset;
    &mut backing[start..start + len]
}

#[allow(clippy::too_many_arguments)]
fn check<R: Rounds>(kernel: Kernel, key: &[u8; 32], nonce: Nonce<'_>, counter: u64, units: usize, offsets: Offsets, state: &mut u64) {
    // SAFETY (both): `kernel` comes from `kernels_here`, whose features are detected.
    let xor = |key: &[u8; 32], nonce, counter, rounds, input, out: &mut [u8]| unsafe { xor_with(kernel, key, nonce, counter, rounds, input, out, None) };
    let xor_copying = |key: &[u8; 32], nonce, counter, rounds, input, out: &mut [u8], copy| unsafe { xor_with(kernel, key, nonce, counter, rounds, input, out, copy) };
    let len = units * UNIT_BYTES;
    let what = format!("{kernel:?}: {} rounds, counter {counter:#x}, {units} units, {offsets:?}", 2 * R::COUNT);
    let mut data_backing = random(state, len + 192);
    let mut inplace_backing = vec![0u8; len + 192];
    let data = &*at_line_offset(&mut data_backing, offsets.data, len + 64); // 64 bytes more than the units
    let expected = crate_xor::<R>(key, nonce, counter, &data[..len]);
    let mut out_backing = vec![0xAAu8; len + 192];
    let out = at_line_offset(&mut out_backing, offsets.out, len + 64);
    assert_eq!(xor(key, nonce, counter, R::COUNT, Some(data), out), len);
    assert_eq!(&out[..len], &expected[..], "out of place: {what}");
    assert!(out_backing.iter().filter(|&&b| b != 0xAA).count() <= len, "outside the units: {what}");
    let inplace = at_line_offset(&mut inplace_backing, offsets.data, len + 64);
    inplace.copy_from_slice(data);
    assert_eq!(xor(key, nonce, counter, R::COUNT, None, inplace), len);
    assert_eq!(&inplace[..len], &expected[..], "in place: {what}");
    assert_eq!(&inplace[len..], &data[len..], "in place, past the units: {what}");
    let mut both_backing = vec![0x55u8; len + 192];
    let mut copy_backing = vec![0x33u8; len + 192];
    let both = at_line_offset(&mut both_backing, offsets.out, len + 64);
    let copy = at_line_offset(&mut copy_backing, offsets.copy, len + 64);
    assert_eq!(xor_copying(key, nonce, counter, R::COUNT, Some(data), both, Some(&mut copy[..])), len);
    assert_eq!((&both[..len], &copy[..len]), (&expected[..], &expected[..]), "with a copy: {what}");
    assert!(both_backing.iter().filter(|&&b| b != 0x55).count() <= len, "outside the units: {what}");
    assert!(copy_backing.iter().filter(|&&b| b != 0x33).count() <= len, "outside the units of the copy: {what}");
}

/// Bit for bit the crate's bytes: random keys and nonces; counters at 0
/// and either side of 2^32 (the carry into the high word) and 2^64
/// (where the DJB counter wraps); one to five units; every offset of the
/// output from a 64-byte line (the AVX-512 kernel's shifted stores where
/// it is a multiple of 4), with the input and the copy at the same and at
/// other offsets; in place, out of place, and out of place with a copy.
#[test]
fn matches_the_crate() {
    let kernels = kernels_here();
    if kernels.is_empty() {
        eprintln!("this CPU has no AVX2: xor does nothing here (checked by whole_units_only)");
    }
    for kernel in kernels {
        matches_the_crate_on(kernel);
    }
}

fn matches_the_crate_on(kernel: Kernel) {
    let mut state = 0x2545_F491_4F6C_DD1D;
    let djb_counters = [0, 1, (1 << 32) - 16, (1 << 32) - 5, (1 << 32) - 1, 1 << 32, u64::MAX - 15, u64::MAX - 3, u64::MAX];
    for (round, out) in (0..64).chain(0..64).chain(0..64).enumerate() {
        // The first 64 rounds: all three at one offset; then apart, the
        // last 64 with the input a whole number of words (1-15) past the
        // output's offset (`Input`'s whole lines).
        let offsets = match round / 64 {
            0 => Offsets { data: out, out, copy: out },
            1 => Offsets { data: (out * 7 + 3) % 64, out, copy: (out * 13 + 4) % 64 },
            _ => Offsets { data: (out + 4 * (1 + round % 15)) % 64, out, copy: (out * 13 + 4) % 64 },
        };
        let key: [u8; 32] = random(&mut state, 32).try_into().unwrap();
        let djb: [u8; 8] = random(&mut state, 8).try_into().unwrap();
        let ietf: [u8; 12] = random(&mut state, 12).try_into().unwrap();
        let units = 1 + round % 5;
        let counter = djb_counters[round % djb_counters.len()];
        check::<R20>(kernel, &key, Nonce::Djb(&djb), counter, units, offsets, &mut state);
        // The 32-bit layout: counters that keep the call below 2^32.
        let ietf_counter = u64::from(u32::MAX) + 1 - (units * UNIT_BLOCKS) as u64 - (round as u64 % 7);
        for counter in [0, 7, ietf_counter] {
            check::<R20>(kernel, &key, Nonce::Ietf(&ietf), counter, units, offsets, &mut state);
            check::<R12>(kernel, &key, Nonce::Ietf(&ietf), counter, units, offsets, &mut state);
            check::<R8>(kernel, &key, Nonce::Ietf(&ietf), counter, units, offsets, &mut state);
        }
    }
}

/// Column 1's first round is done once per call wherever word 13 is
/// the same in all the call's blocks: always in RFC 8439's layout (it
/// is nonce), in the DJB one unless the low counter word wraps within
/// the call. Column 0 (the low counter word) is never done ahead, nor
/// column 1 where the high word differs between blocks.
#[cfg(target_arch = "x86_64")]
#[test]
fn first_column_round_ahead_only_where_the_same_in_every_block() {
    let key: [u8; 32] = std::array::from_fn(|i| i as u8);
    let below = (1u64 << 32) - 16;
    for (nonce, counter, blocks, uniform) in [
        (Nonce::Ietf(&[9; 12]), u64::from(u32::MAX) - 15, 16, true),
        (Nonce::Djb(&[9; 8]), 0, 1 << 20, true),
        (Nonce::Djb(&[9; 8]), below, 16, true),
        (Nonce::Djb(&[9; 8]), below + 1, 16, false),
        (Nonce::Djb(&[9; 8]), below, 17, false),
        (Nonce::Djb(&[9; 8]), 1 << 32, 16, true),
    ] {
        let state = State::new(&key, nonce, counter, blocks);
        let what = format!("counter {counter:#x}, {blocks} blocks");
        assert_eq!(state.high_uniform, uniform, "{what}");
        let mut expected = state.words;
        for column in if uniform { 1..4 } else { 2..4 } {
            quarter_round(&mut expected, column, column + 4, column + 8, column + 12);
        }
        assert_eq!(state.first, expected, "{what}");
        for word in [0, 4, 8, 12] {
            assert_eq!(state.first[word], state.words[word], "column 0 left to the kernel: {what}");
        }
    }
}

/// Less than a unit is left to the caller; so is everything on a CPU
/// where the kernel does not run.
#[test]
fn whole_units_only() {
    let key = [7u8; 32];
    let mut out = vec![0u8; 3 * UNIT_BYTES - 1];
    let done = xor(&key, Nonce::Djb(&[1; 8]), 0, 10, None, &mut out);
    assert_eq!(done, if available() { 2 * UNIT_BYTES } else { 0 });
    assert!(out[done..].iter().all(|&b| b == 0), "bytes past the units were written");
    assert_eq!(xor(&key, Nonce::Djb(&[1; 8]), 0, 10, None, &mut out[..UNIT_BYTES - 1]), 0);
}

/// RFC 8439 section 2.4.2's example: its plaintext encrypted from block
/// counter 1, padded to a unit with zeros (whose ciphertext is then the
/// keystream), against the RFC's ciphertext.
#[test]
fn rfc8439_encryption() {
    for kernel in kernels_here() {
        rfc8439_encryption_on(kernel);
    }
}

fn rfc8439_encryption_on(kernel: Kernel) {
    let key: [u8; 32] = std::array::from_fn(|i| i as u8);
    let nonce = [0, 0, 0, 0, 0, 0, 0, 0x4a, 0, 0, 0, 0];
    let plaintext = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it.";
    let expected = hex::decode(
        "6e2e359a2568f98041ba0728dd0d6981e97e7aec1d4360c20a27afccfd9fae0b\
         f91b65c5524733ab8f593dabcd62b3571639d624e65152ab8f530c359f0861d8\
         07ca0dbf500d6a6156a38e088a22b65e52bc514d16ccf806818ce91ab7793736\
         5af90bbf74a35be6b40b8eedf2785e42874d",
    )
    .unwrap();
    let mut unit = vec![0u8; UNIT_BYTES];
    unit[..plaintext.len()].copy_from_slice(plaintext);
    // SAFETY: `kernel` comes from `kernels_here`, whose features are detected.
    let done = unsafe { xor_with(kernel, &key, Nonce::Ietf(&nonce), 1, 10, None, &mut unit, None) };
    assert_eq!(done, UNIT_BYTES, "{kernel:?}");
    assert_eq!(hex::encode(&unit[..plaintext.len()]), hex::encode(&expected), "{kernel:?}");
}

/// Runs `run` over the cases of the stack tests: one and three units of
/// both layouts (the DJB one with the low counter word wrapping within the
/// call); in place, out of place and with a copy; the output on a line and
/// 16 bytes past one (the AVX-512 kernel's shifted stores). `run` gets the
/// case's name, key, nonce, counter, input, output (holding the data, for
/// in place), copy and data.
#[cfg(target_arch = "x86_64")]
#[allow(clippy::type_complexity)]
fn stack_cases(mut run: impl FnMut(&str, &[u8; 32], Nonce<'_>, u64, Option<&[u8]>, &mut [u8], Option<&mut [u8]>, &[u8])) {
    let mut state = 0x6A09_E667_F3BC_C908;
    let key: [u8; 32] = random(&mut state, 32).try_into().unwrap();
    let (djb, ietf): ([u8; 8], [u8; 12]) = (random(&mut state, 8).try_into().unwrap(), random(&mut state, 12).try_into().unwrap());
    for units in [1, 3] {
        let len = units * UNIT_BYTES;
        let data = random(&mut state, len);
        for (nonce, counter, out_offset, with_copy, in_place) in [
            (Nonce::Djb(&djb), (1 << 32) - 20, 0, false, true),
            (Nonce::Djb(&djb), (1 << 32) - 20, 16, false, false),
            (Nonce::Ietf(&ietf), 7, 0, true, false),
            (Nonce::Ietf(&ietf), 7, 16, true, true),
        ] {
            let what = format!("{units} units, counter {counter:#x}, output {out_offset} bytes past a line, copy {with_copy}, in place {in_place}");
            let mut out_backing = vec![0u8; len + 192];
            let out = at_line_offset(&mut out_backing, out_offset, len);
            out.copy_from_slice(&data);
            let mut copy = vec![0u8; len];
            let input = (!in_place).then_some(&data[..]);
            run(&what, &key, nonce, counter, input, out, with_copy.then_some(&mut copy[..]), &data);
        }
    }
}

/// Each kernel writes at most `KERNEL_SCRUB_BYTES` of stack below the frame
/// that calls it, so that the scrub of `xor_with` zeroes all of its frame.
#[cfg(target_arch = "x86_64")]
#[test]
fn kernels_write_within_the_scrub() {
    use crate::wipe::probe;
    for kernel in kernels_here() {
        let mut deepest = 0;
        stack_cases(|what, key, nonce, counter, input, out, copy, _| {
            let units = out.len() / UNIT_BYTES;
            let state = State::new(key, nonce, counter, units * UNIT_BLOCKS);
            let src = input.map_or(out.as_ptr(), |input| input.as_ptr());
            let copy = copy.map_or(std::ptr::null_mut(), |copy| copy.as_mut_ptr());
            let dst = out.as_mut_ptr();
            // SAFETY: `kernel` comes from `kernels_here`; the buffers hold `units` units.
            let (_, depth) = probe::after(|| unsafe { run(kernel, &state, 10, src, dst, copy, units) });
            assert!(depth <= KERNEL_SCRUB_BYTES, "{kernel:?}, {what}: {depth} bytes of stack written");
            deepest = deepest.max(depth);
        });
        eprintln!("{kernel:?}: {deepest} bytes of stack written, {KERNEL_SCRUB_BYTES} scrubbed");
        assert!(deepest > 0, "{kernel:?}: the probe must see the kernel's frame");
    }
}

/// No 8 bytes of a run's keystream are left on the stack below the caller
/// of `xor_with`, as none of a unit's blocks in the kernels' frames (the
/// AVX-512 kernel's 16 blocks outnumber the registers), which lie deeper
/// than some callers' scrubs reach (`wipe::scrub_stack` after
/// the raw ciphers' calls).
#[cfg(target_arch = "x86_64")]
#[test]
fn no_keystream_left_on_the_stack() {
    use crate::wipe::probe;
    if kernels_here().is_empty() {
        eprintln!("skipped: this CPU runs no kernel");
    }
    let mut left = Vec::new();
    for kernel in kernels_here() {
        stack_cases(|what, key, nonce, counter, input, out, copy, data| {
            let len = out.len();
            // SAFETY: `kernel` comes from `kernels_here`, whose features are detected.
            let (stack, _) = probe::after(|| assert_eq!(unsafe { xor_with(kernel, key, nonce, counter, 10, input, out, copy) }, len));
            let keystream: Vec<u8> = out.iter().zip(data).map(|(o, d)| o ^ d).collect();
            match probe::deepest_copy(&stack, &keystream) {
                0 => {}
                depth => left.push(format!("{kernel:?}, {what}: down to {depth} bytes below the caller")),
            }
        });
    }
    assert!(left.is_empty(), "keystream left on the stack:\n{}", left.join("\n"));
}
