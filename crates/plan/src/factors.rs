//! The factors of a sweep, each a list of levels, and their cartesian
//! product: the levels struct is generated from record's factor table.

pub use record::factor::Factors;

#[cfg(test)]
mod tests {
    use super::*;
    use record::TestKind;

    #[test]
    fn cartesian_product_in_order() {
        let f = Factors {
            write_size: vec![10, 100, 1000],
            nodelay: vec![false, true],
            ..Factors::default()
        };
        let pts = f.expand(TestKind::TcpStream).unwrap();
        assert_eq!(pts.len(), 6);
        assert_eq!((pts[0].write_size, pts[0].nodelay), (10, false));
        assert_eq!((pts[1].write_size, pts[1].nodelay), (10, true));
        assert_eq!((pts[5].write_size, pts[5].nodelay), (1000, true));
        assert_eq!(f.varying(), vec!["write_size", "nodelay"]);
    }

    #[test]
    fn bytes_replace_the_default_duration() {
        let f = Factors {
            bytes: vec![1 << 20],
            ..Factors::default()
        };
        let p = &f.expand(TestKind::TcpStream).unwrap()[0];
        assert_eq!((p.bytes, p.duration_s), (Some(1 << 20), None));
        let both = Factors {
            bytes: vec![1],
            duration_s: vec![1.0],
            ..Factors::default()
        };
        assert!(both.expand(TestKind::TcpStream).is_err());
    }
}
