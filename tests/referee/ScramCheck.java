import java.util.Base64;

import org.apache.kafka.common.security.scram.internals.ScramFormatter;
import org.apache.kafka.common.security.scram.internals.ScramMechanism;

/**
 * The SCRAM credential Kafka stores for a password: what the admin client sends (the salted password) turned into
 * storedKey and serverKey as ScramControlManager.finishUpsertion does. Arguments: mechanism name (SCRAM-SHA-256),
 * password, salt (base64), iterations. Prints "storedKey serverKey" in base64.
 */
public class ScramCheck {
    public static void main(String[] args) throws Exception {
        ScramFormatter formatter = new ScramFormatter(ScramMechanism.forMechanismName(args[0]));
        byte[] salt = Base64.getDecoder().decode(args[2]);
        byte[] saltedPassword = formatter.saltedPassword(args[1], salt, Integer.parseInt(args[3]));
        Base64.Encoder encoder = Base64.getEncoder();
        System.out.println(encoder.encodeToString(formatter.storedKey(formatter.clientKey(saltedPassword))) + " "
            + encoder.encodeToString(formatter.serverKey(saltedPassword)));
    }
}
