//! Snapshots of the transforms worth reading in full.

use codemode_ts::transform;

#[test]
fn enum_is_transformed() {
    insta::assert_snapshot!(transform("enum Color { Red, Green = 5, Blue }\nconst c: Color = Color.Blue;\nreturn [c, Color[5]];").unwrap());
}

#[test]
fn namespace_is_transformed() {
    insta::assert_snapshot!(transform("namespace Geometry {\n  export const unit = 1;\n  export function double(x: number) { return x * 2 * unit; }\n}\nreturn Geometry.double(21);").unwrap());
}

#[test]
fn parameter_properties_are_transformed() {
    insta::assert_snapshot!(transform("class Point {\n  constructor(private readonly x: number, public y: number) {}\n  sum(): number { return this.x + this.y; }\n}\nreturn new Point(1, 2).sum();").unwrap());
}

#[test]
fn realistic_cell() {
    insta::assert_snapshot!(transform(include_str!("cell.ts")).unwrap());
}
