import Foundation
import SightlineSupport
import Synchronization
import SightlineVision
import SightlinePipeline
import SightlineHTTP

/// The template endpoints:
/// - `GET /api/templates`, `GET /api/templates/NAME.png`;
/// - `POST /api/templates?name=NAME[&threshold=T]` with a JPEG or PNG as the
///   body or as multipart form data;
/// - `PATCH`/`PUT /api/templates/NAME {"threshold": T}`; `DELETE /api/templates/NAME`.
/// Changes reach the pipeline through the template library, so they take
/// effect on the next processed frame. Uploaded templates are persisted.
///
/// Threads: the list runs on the lws service thread (memory only); upload,
/// thumbnail, change and delete decode, encode or write files, so they run
/// on the RequestWorker. `uploaded` is in a `Mutex`; the library and the
/// store guard their own state.
///
/// A write that fails (a full disk) is answered in words without paths
/// ("cannot save the template" / "no space left on the device ..."; 507 when
/// the disk is full), logged and counted (`storage.writeFailures`); nothing
/// changes, and the next upload works once there is space again.
public final class TemplateAPI: Sendable {
    public static let maximumTemplates = 16
    /// Gray-level standard deviation under which a template is too flat for
    /// TM_CCOEFF_NORMED (a flat colour has none).
    public static let minimumTexture = 6.0

    private let library: TemplateLibrary
    private let store: TemplateStore?
    private let defaultThreshold: Double
    private let frameSize: @Sendable () -> (width: Int, height: Int)?
    private let uploaded: Locked<Set<String>>
    private let storageFailures: StorageFailureReporter

    public init(library: TemplateLibrary, store: TemplateStore?, uploadedNames: Set<String>,
                defaultThreshold: Double, frameSize: @escaping @Sendable () -> (width: Int, height: Int)?,
                storageFailures: StorageFailureReporter = StorageFailureReporter()) {
        self.library = library
        self.store = store
        self.storageFailures = storageFailures
        self.defaultThreshold = defaultThreshold
        self.frameSize = frameSize
        uploaded = Locked(uploadedNames)
    }

    /// Its entries in the route table.
    public var routes: [Route] {
        [
            Route(.get, "/api/templates", access: .viewer) { [library] request in
                let base = Self.listPath(request.path)
                return .json(["templates": library.all.map { Self.summary($0, listPath: base) }])
            },
            Route(.post, "/api/templates", access: .admin, .worker) { [self] request in upload(request) },
            Route(.get, "/api/templates/{name}.png", access: .viewer, .worker) { [self] request in
                image(named: request.parameters["name"] ?? "")
            },
            Route(.patch, "/api/templates/{name}", access: .admin, .worker) { [self] request in
                changeThreshold(of: request.parameters["name"] ?? "", body: request.body, listPath: Self.listPath(request.path))
            },
            Route(.put, "/api/templates/{name}", access: .admin, .worker) { [self] request in
                changeThreshold(of: request.parameters["name"] ?? "", body: request.body, listPath: Self.listPath(request.path))
            },
            Route(.delete, "/api/templates/{name}", access: .admin, .worker) { [self] request in
                delete(request.parameters["name"] ?? "")
            },
        ]
    }

    struct Summary: Encodable {
        var name: String
        var width: Int
        var height: Int
        var threshold: Double
        var createdAt: Double
        var thumbnail: String
    }

    /// `listPath`: where the request found the templates (`/api/templates`, or
    /// a camera's `/api/cameras/NAME/templates`), so the thumbnail is that camera's.
    static func summary(_ template: Template, listPath: String = "/api/templates") -> Summary {
        let escaped = template.name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? template.name
        return Summary(name: template.name, width: template.image.width, height: template.image.height,
                       threshold: template.threshold, createdAt: template.createdAt.timeIntervalSince1970.rounded(toPlaces: 3),
                       thumbnail: "\(listPath)/\(escaped).png")
    }

    /// The templates' list path a request came by: its path up to `/templates`.
    static func listPath(_ requestPath: String) -> String {
        guard let end = requestPath.range(of: "/templates")?.upperBound else { return "/api/templates" }
        return String(requestPath[..<end])
    }

    // MARK: - Upload

    private func upload(_ request: HTTPRequest) -> HTTPResponse {
        var body = request.body
        var name = request.query["name"]
        var thresholdText = request.query["threshold"]
        if let form = request.form {
            guard let file = form.file else {
                return .error(400, "no file in the form", detail: "send the image as a file field")
            }
            body = file
            name = name ?? form.fields["name"].flatMap { $0.isEmpty ? nil : $0 }
                ?? form.fileName.map { ($0 as NSString).deletingPathExtension }
            thresholdText = thresholdText ?? form.fields["threshold"].flatMap { $0.isEmpty ? nil : $0 }
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
        return .json(["template": Self.summary(template, listPath: Self.listPath(request.path))], status: 201)
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

    private func changeThreshold(of name: String, body: Data, listPath: String) -> HTTPResponse {
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
            return .json(["template": Self.summary(changed, listPath: listPath)])
        } catch {
            return .error(500, "cannot change the template", detail: "\(error)")
        }
    }

    private func delete(_ name: String) -> HTTPResponse {
        guard library.all.contains(where: { $0.name == name }) else { return .error(404, "no such template", detail: name) }
        library.remove(named: name)
        let wasUploaded = uploaded.withLock { $0.remove(name) != nil }
        if wasUploaded, let store {
            do {
                try store.save(persistedTemplates())
            } catch {
                return storageProblem(error, action: "deleted, but the data directory could not be updated")
            }
        }
        return .json(["deleted": name])
    }

    /// Writes the template (and the index) before the library changes, so
    /// nothing is half-done: on a write failure the upload is refused whole.
    private func persist(adding template: Template, imageChanged: Bool = true) -> HTTPResponse? {
        guard let store else { return nil }
        let isUpload = imageChanged || uploaded.withLock { $0.contains(template.name) }
        guard isUpload else { return nil }
        var all = persistedTemplates().filter { $0.name != template.name }
        all.append(template)
        do {
            try store.save(all, writingImageOf: imageChanged ? template : nil)
            uploaded.withLock { _ = $0.insert(template.name) }
            return nil
        } catch {
            return storageProblem(error, action: "cannot save the template")
        }
    }

    /// A failed write in words (counted and logged); any other failure of
    /// saving (encoding the PNG) as it is, since it holds no path.
    private func storageProblem(_ error: Error, action: String) -> HTTPResponse {
        guard let storage = storageFailures.report(error, area: .templates, action: action) else {
            return .error(500, action, detail: "\(error)")
        }
        return .storageFailure(storage, action: action)
    }

    private func persistedTemplates() -> [Template] {
        let names = uploaded.withLock { $0 }
        return library.all.filter { names.contains($0.name) }
    }
}
