//! The misuse log: every call the pool must never make, as a sentence, so tests can assert
//! that the log stays empty (or names exactly the misuse they provoked).

use parking_lot::Mutex;

#[derive(Default)]
pub(crate) struct Violations(Mutex<Vec<String>>);

impl Violations {
    pub(crate) fn record(&self, sentence: String) {
        tracing::warn!(target: "hipfft_pool::sim", "misuse: {sentence}");
        self.0.lock().push(sentence);
    }

    pub(crate) fn all(&self) -> Vec<String> {
        self.0.lock().clone()
    }
}
