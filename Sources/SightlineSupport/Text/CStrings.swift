import Foundation

/// Calls body with a C array of C strings that live for the call.
package func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) throws -> R) rethrows -> R {
    let copies = strings.map { strdup($0) }
    defer { copies.forEach { free($0) } }
    return try body(copies.map { UnsafePointer($0) })
}
