// libFuzzer target: the upload checks that run before and around any decoder:
// the magic number, the header's size, the PNG inflate budget (zlib into a
// scratch buffer, counted against what the header allows) and, for what passes
// them, the decoder itself with the frame-size limit. Nothing may crash or take
// more than the budget allows. Built by `make fuzz` (Tests/Fuzz/README.md).
import Foundation
@testable import SightlineCore
@testable import SightlineSupport
@testable import SightlinePipeline
@testable import SightlineHTTP
@testable import SightlineVision

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUpload(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
    let data = Data(bytes: start, count: count)
    guard let format = ImageUpload.format(of: data) else { return 0 }
    guard let size = try? ImageUpload.dimensions(of: data, format: format) else { return 0 }
    if format == .png {
        guard (try? PNGInflateBudget.check(data)) != nil else { return 0 }
    }
    guard size.width * size.height <= 640 * 480 else { return 0 }
    _ = try? ImageUpload.decode(data, fitting: (width: 640, height: 480))
    return 0
}

// SwiftPM links executables with main renamed to <module>_main (for testable
// executables); libFuzzer's own main is then not linked, so this one starts it.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(_ argc: UnsafeMutablePointer<CInt>,
                     _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                     _ callback: @convention(c) (UnsafeRawPointer, Int) -> CInt) -> CInt

@_cdecl("FuzzUpload_main")
func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var count = argc
    var arguments = argv
    return runFuzzerDriver(&count, &arguments) { fuzzUpload($0, $1) }
}
