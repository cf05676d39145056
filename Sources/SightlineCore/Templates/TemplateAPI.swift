import Foundation

/// The template endpoints:
/// - `GET /api/templates`, `GET /api/templates/NAME.png`;
/// - `POST /api/templates?name=NAME[&threshold=T]` with a JPEG or PNG as the
///   body or as multipart form data;
/// - `PATCH`/`PUT /api/templates/NAME {"threshold": T}`; `DELETE /api/templates/NAME`.
/// Changes reach the pipeline through the template library, so they take
/// effect on the next processed frame. Uploaded templates are persisted.
///
/// Threads: runs on the lws service thread; `uploaded` is guarded by `lock`,
/// the library and store have their own.
public final class TemplateAPI: @unchecked Sendable {
    public static let maximumTemplates = 16
    /// Gray-level standard deviation under which a template is too flat for
    /// TM_CCOEFF_NORMED (a flat colour has none).
    public static let minimumTexture = 6.0

    private let library: TemplateLibrary
    private let store: TemplateStore?
    private let auth: AuthGuard
    private let defaultThreshold: Double
    private let frameSize: @Sendable () -> (width: Int, height: Int)?
    private let lock = NSLock()
    private var uploaded: Set<String>

    public init(library: TemplateLibrary, store: TemplateStore?, uploadedNames: Set<String>, auth: AuthGuard,
                defaultThreshold: Double, frameSize: @escaping @Sendable () -> (width: Int, height: Int)?) {
        self.library = library
        self.store = store
        self.auth = auth
        self.defaultThreshold = defaultThreshold
        self.frameSize = frameSize
        uploaded = uploadedNames
    }

    public func respond(to request: HTTPRequest) -> HTTPResponse? {
        let prefix = "/api/templates"
        guard request.path == prefix || request.path.hasPrefix(prefix + "/") else { return nil }
        let rest = String(request.path.dropFirst(prefix.count + 1))
        let name = rest.removingPercentEncoding ?? rest
        switch (request.method, rest.isEmpty) {
        case (.get, true):
            return .json(["templates": library.all.map(Self.summary)])
        case (.post, true):
            return auth.refusal(for: request) ?? upload(request)
        case (.get, false) where name.hasSuffix(".png"):
            return image(named: String(name.dropLast(4)))
        case (.patch, false), (.put, false):
            return auth.refusal(for: request) ?? changeThreshold(of: name, body: request.body)
        case (.delete, false):
            return auth.refusal(for: request) ?? delete(name)
        default:
            return .error(405, "method not allowed",
                          detail: "GET or POST /api/templates; GET /api/templates/NAME.png; PATCH, PUT or DELETE /api/templates/NAME")
        }
    }

    struct Summary: Encodable {
        var name: String
        var width: Int
        var height: Int
        var threshold: Double
        var createdAt: Double
        var thumbnail: String
    }

    static func summary(_ template: Template) -> Summary {
        let escaped = template.name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? template.name
        return Summary(name: template.name, width: template.image.width, height: template.image.height,
                       threshold: template.threshold, createdAt: template.createdAt.timeIntervalSince1970.rounded(toPlaces: 3),
                       thumbnail: "/api/templates/\(escaped).png")
    }

    // MARK: - Upload

    private func upload(_ request: HTTPRequest) -> HTTPResponse {
        var body = request.body
        var name = request.query["name"].map { $0.removingPercentEncoding ?? $0 }
        var thresholdText = request.query["threshold"]
        if let boundary = MultipartForm.boundary(of: request.headers["content-type"] ?? "") {
            do {
                let form = try MultipartForm(body: request.body, boundary: boundary)
                guard let file = form.file else {
                    return .error(400, "no file in the form", detail: "send the image as a file field")
                }
                body = file.data
                name = name ?? form.field("name") ?? file.filename.map { ($0 as NSString).deletingPathExtension }
                thresholdText = thresholdText ?? form.field("threshold")
            } catch {
                return .error(400, "malformed form data", detail: "\(error)")
            }
        }
        guard let name, !name.isEmpty else {
            return .error(400, "missing name", detail: "give the template a name: POST /api/templates?name=NAME")
        }
        if let problem = TemplateName.problem(with: name) { return .error(400, "bad template name", detail: problem) }
        var threshold = defaultThreshold
        if let thresholdText {
            guard let value = Double(thresholdText), (0...1).contains(value) else {
                return .error(400, "bad threshold", detail: "a number from 0 to 1, got '\(thresholdText)'")
            }
            threshold = value
        }
        let existing = library.all
        if existing.count >= Self.maximumTemplates && !existing.contains(where: { $0.name == name }) {
            return .error(409, "too many templates", detail: "at most \(Self.maximumTemplates); delete one first")
        }
        let image: ImageBuffer
        do {
            image = try ImageUpload.decode(body, fitting: frameSize())
        } catch let rejection as ImageUpload.Rejection {
            return .error(rejection.status, rejection.error, detail: rejection.detail)
        } catch {
            return .error(422, "cannot read the image", detail: "\(error)")
        }
        let template: Template
        do {
            template = try Template(name: name, image: image, threshold: threshold)
            let texture = try ImageOps.meanStdDev(template.gray).stddev
            guard texture >= Self.minimumTexture else {
                return .error(422, "template has no texture",
                              detail: String(format: "gray levels vary by %.1f (at least %.0f needed): ", texture, Self.minimumTexture)
                                  + "a flat picture cannot be matched; crop something with detail")
            }
        } catch {
            return .error(422, "cannot use the image", detail: "\(error)")
        }
        if let problem = persist(adding: template) { return problem }
        library.put(template)
        return .json(["template": Self.summary(template)], status: 201)
    }

    // MARK: - Other calls

    private func image(named name: String) -> HTTPResponse {
        guard let template = library.all.first(where: { $0.name == name }) else {
            return .error(404, "no such template", detail: name)
        }
        do {
            return .data(try ImageIO.encode(template.image, as: ".png"), contentType: "image/png",
                         headers: [("cache-control:", "no-cache")])
        } catch {
            return .error(500, "cannot encode the template", detail: "\(error)")
        }
    }

    private struct ThresholdBody: Decodable { var threshold: Double }

    private func changeThreshold(of name: String, body: Data) -> HTTPResponse {
        guard let template = library.all.first(where: { $0.name == name }) else {
            return .error(404, "no such template", detail: name)
        }
        guard let change = try? JSONDecoder().decode(ThresholdBody.self, from: body), (0...1).contains(change.threshold) else {
            return .error(400, "bad body", detail: "send {\"threshold\": T} with T from 0 to 1")
        }
        do {
            let changed = try template.with(threshold: change.threshold)
            if let problem = persist(adding: changed, imageChanged: false) { return problem }
            library.put(changed)
            return .json(["template": Self.summary(changed)])
        } catch {
            return .error(500, "cannot change the template", detail: "\(error)")
        }
    }

    private func delete(_ name: String) -> HTTPResponse {
        guard library.all.contains(where: { $0.name == name }) else { return .error(404, "no such template", detail: name) }
        library.remove(named: name)
        let wasUploaded = lock.withLock { uploaded.remove(name) != nil }
        if wasUploaded, let store {
            do {
                try store.save(persistedTemplates())
            } catch {
                return .error(500, "deleted, but the data directory could not be updated", detail: "\(error)")
            }
        }
        return .json(["deleted": name])
    }

    /// Writes the template (and the index) before the library changes, so
    /// nothing is half-done: on a write failure the upload is refused whole.
    private func persist(adding template: Template, imageChanged: Bool = true) -> HTTPResponse? {
        guard let store else { return nil }
        let isUpload = imageChanged || lock.withLock { uploaded.contains(template.name) }
        guard isUpload else { return nil }
        var all = persistedTemplates().filter { $0.name != template.name }
        all.append(template)
        do {
            try store.save(all, writingImageOf: imageChanged ? template : nil)
            lock.withLock { _ = uploaded.insert(template.name) }
            return nil
        } catch {
            return .error(500, "cannot store the template", detail: "\(error)")
        }
    }

    private func persistedTemplates() -> [Template] {
        let names = lock.withLock { uploaded }
        return library.all.filter { names.contains($0.name) }
    }
}
