//! A password in a store address never shows: not in an error's `Display` or `Debug`, not in a
//! store's `Debug`.

use crate::{POSTGRES_URL_VAR, with_database};

const SECRET: &str = "s3cret-Pa55word";

fn assert_hidden(what: &str, text: &str) {
    assert!(!text.contains(SECRET), "{what} shows the password: {text}");
}

#[tokio::test]
async fn an_unreachable_or_malformed_postgres_address_never_shows_its_password() {
    // Port 1 on loopback: nobody listens there (the pool retries a refused connection until
    // its acquire timeout, so the addresses are tried at once).
    let addresses = [
        format!("postgres://me:{SECRET}@127.0.0.1:1/db"),
        format!("postgresql://me:{SECRET}@127.0.0.1:1/db?sslmode=disable"),
        format!("postgres://me@127.0.0.1:1/db?password={SECRET}"),
        format!("postgres://me:{SECRET}@127.0.0.1:notaport/db"),
        format!("postgres://me:{SECRET}@/db?host=/nonexistent-socket-dir"),
    ];
    let opened =
        futures::future::join_all(addresses.iter().map(|a| codemode_journal::open(a))).await;
    for (address, result) in addresses.iter().zip(opened) {
        let error = result.expect_err(address);
        assert_hidden("Display", &error.to_string());
        assert_hidden("Debug", &format!("{error:?}"));
        assert!(
            error.to_string().contains("***"),
            "the redacted address is shown: {error}"
        );
    }
    let error = codemode_journal::open(&format!("mysql://me:{SECRET}@host/db"))
        .await
        .expect_err("not a store address");
    assert_hidden("Display", &error.to_string());
    assert_hidden("Debug", &format!("{error:?}"));
}

#[tokio::test]
#[allow(clippy::print_stderr, reason = "a skipped test says why")]
async fn a_wrong_postgres_password_is_refused_without_showing_it() {
    let Ok(url) = std::env::var(POSTGRES_URL_VAR) else {
        eprintln!("skipped: {POSTGRES_URL_VAR} is not set");
        return;
    };
    // The right password opens the store, whose Debug shows none.
    let real = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(userinfo, _)| userinfo.split_once(':'))
        .map(|(_, password)| password.to_owned());
    let store = codemode_journal::open(&url)
        .await
        .expect("the test Postgres");
    if let Some(real) = real {
        assert!(!format!("{store:?}").contains(&real), "{store:?}");
    }
    // The server checks passwords (xtask's runs with scram-sha-256): a wrong one is refused.
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let host_and_db = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    let wrong = with_database(
        &format!("{scheme}://codemode:{SECRET}@{host_and_db}"),
        "postgres",
    );
    match codemode_journal::open(&wrong).await {
        Err(error) => {
            assert_hidden("Display", &error.to_string());
            assert_hidden("Debug", &format!("{error:?}"));
        }
        Ok(store) => assert_hidden("Debug", &format!("{store:?}")),
    }
}
