//! Every error at once, each at its own token.

use proc_macro2::TokenStream;
use quote::ToTokens;

/// Collects errors instead of stopping at the first, so a user sees every mistake in one
/// build.
#[derive(Default)]
pub(crate) struct Errors {
    all: Option<syn::Error>,
    count: usize,
}

impl Errors {
    /// How many errors so far: a check compares before and after.
    pub(crate) fn count(&self) -> usize {
        self.count
    }

    pub(crate) fn at(&mut self, tokens: impl ToTokens, message: impl std::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub(crate) fn push(&mut self, error: syn::Error) {
        self.count += 1;
        match &mut self.all {
            Some(all) => all.combine(error),
            None => self.all = Some(error),
        }
    }

    /// The errors as `compile_error!`s, or `None` when there were none.
    pub(crate) fn into_compile_errors(self) -> Option<TokenStream> {
        self.all.map(|e| e.to_compile_error())
    }
}
