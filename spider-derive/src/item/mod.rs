//! `#[derive(Item)]`: read each field's `#[css(...)]`, `#[json_ld(...)]` or `#[page(...)]`
//! (`args.rs` their shared syntax) into a checked model (`attr.rs`), then expand; on an
//! enum, an item of several types, one a variant (`variants.rs`).

mod args;
mod attr;
mod expand;
mod variants;

use proc_macro2::TokenStream;

use crate::errors::Errors;

pub(crate) fn derive(input: &syn::DeriveInput) -> TokenStream {
    if let syn::Data::Enum(data) = &input.data {
        return variants::derive(input, data);
    }
    let mut errors = Errors::default();
    let model = attr::read(input, &mut errors);
    match errors.into_compile_errors() {
        Some(compile_errors) => {
            let stub = expand::stub(input);
            quote::quote! { #compile_errors #stub }
        }
        None => expand::expand(input, &model),
    }
}
