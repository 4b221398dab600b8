// Kroxylicious launcher of xp: the main class of the Kroxylicious releases
// xp assembles from Maven Central, which publishes Kroxylicious's runtime
// and filters but not kroxylicious-app (the official release's main class).
// It does what that main class does for xp's purposes: read the YAML config
// named by --config with the runtime's public ConfigParser, and run a
// KafkaProxy until the process is stopped. Written for xp, compiled by
// `make kroxylicious-dist` against the release's own jars.
package xp.launcher;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Properties;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import io.kroxylicious.proxy.KafkaProxy;
import io.kroxylicious.proxy.config.ConfigParser;
import io.kroxylicious.proxy.config.Configuration;
import io.kroxylicious.proxy.internal.config.Feature;
import io.kroxylicious.proxy.internal.config.Features;

public final class Kroxylicious {
    // The logger Kroxylicious's own start-up and shutdown lines go to.
    private static final Logger LOG = LoggerFactory.getLogger("io.kroxylicious.proxy.StartupShutdownLogger");

    private static final String USAGE = "usage: kroxylicious-start.sh --config FILE | --version";

    private Kroxylicious() {
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    static int run(String[] args) {
        Path config = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--version") || a.equals("-V")) {
                System.out.println("kroxylicious: " + version());
                return 0;
            } else if ((a.equals("--config") || a.equals("-c")) && i + 1 < args.length) {
                config = Path.of(args[++i]);
            } else if (a.startsWith("--config=")) {
                config = Path.of(a.substring("--config=".length()));
            } else {
                System.err.println("unknown argument " + a + "; " + USAGE);
                return 2;
            }
        }
        if (config == null) {
            System.err.println("no --config; " + USAGE);
            return 2;
        }
        if (!Files.isRegularFile(config)) {
            System.err.println("Given configuration file does not exist: " + config.toAbsolutePath());
            return 2;
        }
        LOG.info("kroxylicious: {} (xp launcher xp.launcher.Kroxylicious)", version());
        LOG.info("Platform: Java {} ({}) on {} {}/{}", Runtime.version(), System.getProperty("java.vendor"),
                System.getProperty("os.name"), System.getProperty("os.version"), System.getProperty("os.arch"));
        ConfigParser parser = new ConfigParser();
        try (InputStream in = Files.newInputStream(config)) {
            Configuration cfg = parser.parseConfiguration(in);
            Features features = features();
            features.warnings().forEach(LOG::warn);
            try (KafkaProxy proxy = new KafkaProxy(parser, cfg, features)) {
                proxy.startup();
                proxy.block();
            }
        }
        catch (Exception e) {
            LOG.error("Exception on startup", e);
            // The log may be asynchronous or off: the cause reaches stderr too.
            System.err.println("kroxylicious: " + e);
            return 1;
        }
        return 0;
    }

    // features enables what KROXYLICIOUS_UNLOCK_<FEATURE>=true asks for (a
    // system property or the environment), as the official launcher does.
    private static Features features() {
        Features.FeaturesBuilder b = Features.builder();
        for (Feature f : Feature.values()) {
            String name = "KROXYLICIOUS_UNLOCK_" + f.name();
            if (Boolean.parseBoolean(System.getProperty(name, System.getenv(name)))) {
                b.enable(f);
            }
        }
        return b.build();
    }

    // version is the runtime jar's Maven version.
    static String version() {
        try (InputStream in = KafkaProxy.class.getResourceAsStream("/META-INF/maven/io.kroxylicious/kroxylicious-runtime/pom.properties")) {
            if (in != null) {
                Properties p = new Properties();
                p.load(in);
                return p.getProperty("version", "unknown");
            }
        }
        catch (Exception e) {
            // fall through
        }
        return "unknown";
    }
}
