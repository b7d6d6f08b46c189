//! The shared response headers (h3replay's response.rs) as quiche's
//! header type.

use quiche::h3::Header;

use h3replay::response::Field;

/// One field as a quiche header.
pub fn header((name, value): &Field) -> Header {
    Header::new(name, value)
}

/// Every field, in order, as quiche headers.
pub fn headers(fields: &[Field]) -> Vec<Header> {
    fields.iter().map(header).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use quiche::h3::NameValue;

    #[test]
    fn same_names_values_and_order() {
        let h = headers(&h3replay::response::not_found());
        let got: Vec<(&[u8], &[u8])> = h.iter().map(|h| (h.name(), h.value())).collect();
        assert_eq!(got[0], (&b":status"[..], &b"404"[..]));
        assert_eq!(got.len(), 4);
        let a = header(&h3replay::response::alt_svc(443));
        assert_eq!(a.value(), b"h3=\":443\"; ma=86400");
    }
}
