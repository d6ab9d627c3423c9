//! `spiderling sandbox` serves the demo site and stops cleanly on Ctrl-C.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

#[test]
fn sandbox_serves_until_interrupted_and_exits_zero() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_spiderling"))
        .args(["sandbox", "--books", "10"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    let url = first.rsplit(' ').next().unwrap();
    let addr = url.trim_start_matches("http://").trim_end_matches('/');

    let mut stream = TcpStream::connect(addr).unwrap();
    write!(stream, "GET /catalogue/book_3.html HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.contains(r#"<h1 class="title">"#), "{answer}");

    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    let rest: Vec<String> = lines.map(Result::unwrap).collect();
    assert!(rest.iter().any(|line| line == "stopped after 1 requests"), "{rest:?}");
}
