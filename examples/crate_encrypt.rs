//! Ciphertext from the chacha20-blake3 crate itself, for the Python-level
//! interoperability test (tests/api/test_interop_crate.py): cb3 must decrypt it.
//!
//!     cargo run --locked --example crate_encrypt -- KEY_HEX NONCE_HEX AAD_HEX LEN...
//!
//! For each LEN prints one line: the hex of the crate's `encrypt` (ciphertext
//! || tag) of the LEN-byte message whose byte i is (7 * i + 3) % 251.
use chacha20_blake3::ChaCha20Blake3;
use std::fmt::Write as _;
use std::io::Write as _;

fn unhex(text: &str) -> Vec<u8> {
    assert!(text.len() % 2 == 0, "odd-length hex: {text}");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex digits"))
        .collect()
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    assert!(args.len() >= 3, "usage: crate_encrypt KEY_HEX NONCE_HEX AAD_HEX LEN...");
    let key: [u8; 32] = unhex(&args[0]).try_into().expect("a 32-byte key");
    let nonce: [u8; 24] = unhex(&args[1]).try_into().expect("a 24-byte nonce");
    let aad = unhex(&args[2]);
    let cipher = ChaCha20Blake3::new(key);
    let mut out = std::io::stdout().lock();
    for len in &args[3..] {
        let len: usize = len.parse().expect("a length");
        let message: Vec<u8> = (0..len).map(|i| ((7 * i + 3) % 251) as u8).collect();
        let sealed = cipher.encrypt(&nonce, &message, &aad);
        let mut line = String::with_capacity(2 * sealed.len() + 1);
        for byte in &sealed {
            write!(line, "{byte:02x}").unwrap();
        }
        writeln!(out, "{line}").unwrap();
    }
}
