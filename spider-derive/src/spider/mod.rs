//! `#[derive(Spider)]`: read `#[spider(...)]` into a checked model, then expand it.

mod attr;
mod expand;
mod rule;

use proc_macro2::TokenStream;

use crate::errors::Errors;

pub(crate) fn derive(input: &syn::DeriveInput) -> TokenStream {
    let mut errors = Errors::default();
    let model = attr::Settings::read(input, &mut errors);
    match errors.into_compile_errors() {
        // A stub impl beside the errors, so they are the only ones the user sees.
        Some(compile_errors) => {
            let stub = expand::stub(input);
            quote::quote! { #compile_errors #stub }
        }
        None => expand::expand(input, &model),
    }
}
